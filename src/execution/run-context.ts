/**
 * The handle a runner writes through: each write a `record` command the machine decides against the
 * owner's claim, appended with the fencing sequence at the durability boundary; a refused write aborts
 * the run. Streamed text is recorded within `STREAM_RECORD_MS` (why: docs/model-runner.md#runners).
 */
import type { Clock } from '../clock.ts';
import type { IdSource } from '../ids.ts';
import type { LiveBus } from '../events/live-bus.ts';
import type { ExecutionPhase, RecordedError, Usage } from '../events/catalog.ts';
import type { ProtoEvent } from '../machines/commands.ts';
import { Refusal } from '../machines/commands.ts';
import type {
  ModelCallSlot,
  RunContext,
  RunInput,
  SessionCall,
  SessionCallResult,
  SignalResult,
  ToolCall,
  ToolContext,
  ToolProgress,
} from '../runner/types.ts';
import type { AdmitReceipt, AdmitRequest } from '../input/admit.ts';
import type { ChildTurnEnd } from '../recovery/child-turn.ts';
import { checkSessionCall, childInputId, refuseCycle } from './session-calls.ts';
import type { CommandHandler } from './command-handler.ts';
import { runInputs, steeringInputs } from '../input/turn.ts';
import { BudgetExceededError, ErrorCode, SessiondError, ClaimLostError, WaitingError, isRefusal, isSessiondError, recordedError } from '../errors.ts';
import type { BlobRef, BlobStore } from '../blobs/blob-store.ts';
import type { BlobMemory } from '../blobs/blob-memory.ts';
import { TurnBlobs } from '../blobs/turn-blobs.ts';
import { DEFAULT_MAX_PAYLOAD_BYTES, pack } from '../events/codec.ts';
import type { Transcripts } from './transcripts.ts';
import { STREAM_RECORD_MS, StreamRecorder } from './stream-recorder.ts';
import { progressThrottle } from './progress-throttle.ts';
import type { ModelCallGate, WaitingCall } from '../capacity/gate.ts';
import { addUsage, type Exceeded } from '../machines/budget-spend.ts';
import { sessionExceeded } from '../budget/gate.ts';
import { countCall, tenantExceeded } from '../budget/tenant.ts';
import type { TenantBudgetStore } from '../budget/tenant-store.ts';
import { priced, type Prices } from '../budget/prices.ts';
import type { SessionContext } from '../machines/session-context.ts';
import type { Span } from '@opentelemetry/api';
import {
  Attr,
  chatModel,
  contentCaptured,
  contentValue,
  endChatSpan,
  endToolSpan,
  failChatSpan,
  startChatSpan,
  startToolSpan,
  waitSpan,
} from '../observability/tracing.ts';

/** A model request failed and is sent again after `delayMs` (`attempt`: the one that failed): the worker's log says it (a `Notice`). */
export interface RetryNotice {
  type: 'model_retry';
  sessionId: string;
  executionId: string;
  attempt: number;
  delayMs: number;
  error: RecordedError;
}

/** A model call of the turn waits for room under the deployment's limits (`modelCall`): the worker's log says it. */
export interface CapacityNotice {
  type: 'capacity_wait';
  sessionId: string;
  executionId: string;
  /** The limits the call draws from (e.g. `model:gpt-4o`, `tenant:acme`). */
  scopes: string[];
}

/**
 * A model call of the turn ended (its step ended, or failed with `errorType`): how long from its
 * first request (`RunContext.modelCall`) to the end of its last (the slot released), for the GenAI
 * `gen_ai.client.operation.duration` metric. Steps that made no `modelCall` have none.
 */
export interface ModelCallNotice {
  type: 'model_call';
  sessionId: string;
  executionId: string;
  provider: string;
  model: string;
  /** The model that answered, as the runner recorded it. */
  responseModel?: string;
  durationMs: number;
  errorType?: string;
}

/** The slot of a model call when no limit applies: nothing to give back. */
const FREE_SLOT = { release: async () => {}, throttled: async () => {} };

export interface RunContextDeps {
  handler: CommandHandler;
  clock: Clock;
  ids: IdSource;
  bus: LiveBus;
  sessionId: string;
  executionId: string;
  ownerId: string;
  inputs: RunInput[];
  controller: AbortController;
  /** The turn's `invoke_agent` span (src/observability/tracing.ts): its model and tool calls are its children. Default: none. */
  span?: Span;
  transcripts: Transcripts;
  /** Says what the turn does that the log does not (a model request retried, a call waiting for room). */
  notice?: (n: RetryNotice | CapacityNotice | ModelCallNotice) => void;
  /** The deployment's limits on model calls (none: every call goes at once). */
  modelCalls?: ModelCallGate;
  /** The session's owner (its tenant for the limits; null: none). */
  tenant?: string | null;
  /** Model prices: a call's cost is recorded with its usage (`costUsd`) when its model has one. */
  prices?: Prices;
  /** Tenants' budgets, shared by the deployment's workers: checked before each model call of a session with a tenant, and counted after. */
  tenantBudgets?: TenantBudgetStore;
  /** Where blob parts' bytes are read from (`RunContext.blob`; absent: refused). */
  blobs?: BlobStore;
  /** The worker's bound on blob bytes held at once: a blob read whole for the turn reserves its size until the turn ends (default: none). */
  blobMemory?: BlobMemory;
  /** Admits a session call's prompt into its child session and wakes it (absent: `callSession` is refused). */
  callChild?: (sessionId: string, request: AdmitRequest) => Promise<AdmitReceipt>;
}

/** A runner's handle, and what the execution service needs of it when the turn ends. */
export interface Turn {
  ctx: RunContext;
  /** When the runner is done: waits for its writes in flight, then takes what is still buffered (appended with the settlement). */
  drain(): Promise<ProtoEvent[]>;
  /** This execution recorded a wait (an approval, a signal, a timer): the turn settles `waiting`. */
  waited(): boolean;
  /** The sessions this execution admitted a session call into (woken once it has settled). */
  called(): string[];
}

/** The idempotency key a durable tool call carries: stable across retries of the same call. */
export function idempotencyKey(sessionId: string, executionId: string, callId: string): string {
  return `${sessionId}:${executionId}:${callId}`;
}

/**
 * Buffered writes are appended once they pass this many bytes (roughly counted): with one event of
 * at most `DEFAULT_MAX_PAYLOAD_BYTES` on top, an append stays under a NATS message (1 MiB).
 */
export const FLUSH_AT_BYTES = 256 * 1024;

/** About how many bytes an event adds to an append: its large fields measured, the rest a constant. */
const EVENT_BYTES = 200;
/** A tool result over this many bytes is stored as a blob beside the log where the worker has a blob store (the event holds its reference). */
export const TOOL_RESULT_INLINE_BYTES = 256 * 1024;

function sizeOf(e: ProtoEvent): number {
  const p = e.payload as Record<string, unknown>;
  let size = EVENT_BYTES;
  for (const key of ['text', 'summary', 'delta'] as const) if (typeof p[key] === 'string') size += Buffer.byteLength(p[key] as string);
  if (e.type === 'tool.succeeded') size += encodedSize(e.payload.output);
  return size;
}

function encodedSize(value: unknown): number {
  return value === undefined || value === null ? 1 : typeof value === 'string' ? Buffer.byteLength(value) + 5 : pack(value).byteLength;
}

/** A signal's name: 1 to 200 characters (it is the key a value is delivered to). */
function checkWaitName(name: unknown): void {
  if (typeof name !== 'string' || name.length === 0 || name.length > 200)
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `waitFor: the name must be a string of 1 to 200 characters (what sessiond resolve names), not ${JSON.stringify(name)}.`,
    );
}

export function createRunContext(deps: RunContextDeps): Turn {
  const { handler, clock, ids, bus, sessionId, executionId, ownerId, controller } = deps;
  const signal = controller.signal;
  let queue: Promise<unknown> = Promise.resolve();
  let step = 0;
  const inputs = [...deps.inputs];
  let buffered: ProtoEvent[] = [];
  let bufferedBytes = 0;
  /** The phase as this turn has written it (buffered writes included). */
  let phase: ExecutionPhase | undefined = handler.cached(sessionId)?.context.execution?.phase;
  /** Steering inputs promoted by a buffered write: not offered again by the next step. */
  const promoted = new Set<string>();
  /** The turn's waits when this execution started (what a resumed turn has been given). */
  const waits = handler.cached(sessionId)?.context.waits ?? [];
  let waited = false;
  let sleeps = 0;
  /** Session calls in flight: the last one to record its wait ends the execution for all (`Promise.all` is one wait). */
  let calling = 0;
  const called: string[] = [];
  let callGroup: { promise: Promise<never>; reject: (err: unknown) => void; waits: number; plain: number } | undefined;
  /** Session tool calls whose child's answer this execution recorded as their result. */
  const answeredCalls = new Set<string>();
  /** The steps this turn started and has not ended: only their text is recorded as it streams. */
  const openSteps = new Set<string>();
  const streams = new StreamRecorder(executionId);
  /** The blobs this turn read whole, kept for its later model calls (each reserved against the worker's bound until the turn ends). */
  const blobs = new TurnBlobs(deps.blobMemory);
  let recordTimer: ReturnType<Clock['setTimeout']> | undefined;
  /** The turn's span; none when no tracer is registered: then no model or tool call builds one either. */
  const turnSpan = deps.span;
  /** The `chat` spans of the steps started and not ended, by message id (the last one is the newest). */
  const chats = new Map<string, Span>();
  /** The newest step started, and when each open step's model call first asked to go out (`modelCall`). */
  let newestStep: string | undefined;
  /** `ended`: when its last request ended (its slot released), by the clock and by `performance.now()` (the span's end). */
  const calls = new Map<string, { at: number; provider: string; model: string; ended?: { at: number; perf: number } }>();
  /** The end of a step's model call: when its last request ended, not the step (its tools run before the step ends). */
  const requestEnd = (messageId: string): number | undefined => calls.get(messageId)?.ended?.perf;
  const callEnded = (messageId: string, responseModel: string | undefined, errorType: string | undefined): void => {
    const call = calls.get(messageId);
    if (!call) return;
    calls.delete(messageId);
    deps.notice?.({
      type: 'model_call',
      sessionId,
      executionId,
      provider: call.provider,
      model: call.model,
      ...(responseModel ? { responseModel } : {}),
      durationMs: (call.ended?.at ?? clock.now()) - call.at,
      ...(errorType ? { errorType } : {}),
    });
  };
  /** Contents on the spans (messages, tool arguments and results): only when the turn records and the user opted in. */
  const capture = turnSpan?.isRecording() === true && contentCaptured();
  /** The output parts of the open steps' model calls, by message id (captured contents only). */
  const outputs = new Map<string, Record<string, unknown>[]>();
  const output = (messageId: string, part: Record<string, unknown>): void => {
    if (!capture || !chats.has(messageId)) return;
    const parts = outputs.get(messageId);
    if (parts) parts.push(part);
    else outputs.set(messageId, [part]);
  };
  /** Runs a tool call's `run` inside its `execute_tool` span (none without the turn's). */
  const traced = async <T>(a: { name: string; callId: string; durable: boolean; messageId: string; input: unknown }, run: () => Promise<T>): Promise<T> => {
    if (!turnSpan) return run();
    const span = startToolSpan(turnSpan, { sessionId, executionId, name: a.name, callId: a.callId, durable: a.durable });
    if (capture) span.setAttribute(Attr.toolArguments, contentValue(a.input));
    output(a.messageId, { type: 'tool_call', id: a.callId, name: a.name, arguments: a.input });
    try {
      const out = await run();
      if (capture) span.setAttribute(Attr.toolResult, contentValue(out));
      endToolSpan(span);
      return out;
    } catch (err) {
      endToolSpan(span, err);
      throw err;
    }
  };

  const buffer = (events: ProtoEvent[]): void => {
    if (signal.aborted) throw signal.reason;
    for (const e of events) if (e.type === 'execution.phase') phase = e.payload.phase;
    buffered.push(...events);
  };

  /** Appends everything buffered (in call order; one append), and waits for it to be durable. */
  const flush = (): Promise<void> => {
    const next = queue.then(async () => {
      if (signal.aborted) throw signal.reason;
      // what streamed rides with every durable write (after the writes it followed)
      const events = streams.dirty ? [...buffered, ...streams.take()] : buffered;
      buffered = [];
      bufferedBytes = 0;
      if (streams.dirty) armRecord(0); // more than one record holds: the rest goes next
      if (events.length === 0) return;
      try {
        await handler.execute(sessionId, (now) => ({ type: 'record', now, ownerId, executionId, events }));
      } catch (err) {
        if (isRefusal(err)) {
          const reason = err.reason === Refusal.Cancelled ? err : new ClaimLostError(executionId, err);
          if (!signal.aborted) controller.abort(reason);
          throw signal.reason;
        }
        throw err;
      }
    });
    queue = next.catch(() => {});
    return next;
  };

  /**
   * Records what streamed `ms` from now (unless a durable write takes it first). A recording that
   * fails stops the turn as a durable write's failure would (a refusal: the claim was lost).
   */
  function armRecord(ms = STREAM_RECORD_MS): void {
    if (recordTimer !== undefined) return;
    recordTimer = clock.setTimeout(() => {
      recordTimer = undefined;
      if (signal.aborted || !streams.dirty) return;
      flush().catch((err: unknown) => {
        if (!signal.aborted) controller.abort(err);
      });
    }, ms);
  }

  const durable = (events: ProtoEvent[]): Promise<void> => {
    try {
      buffer(events);
    } catch (err) {
      return Promise.reject(err);
    }
    return flush();
  };

  /**
   * Buffers a write; the promise settles at once (rejected when the turn was stopped), unless the
   * buffer has grown past `FLUSH_AT_BYTES`: then what is buffered is appended first (earlier than it
   * had to be, which is always safe), so no append outgrows a message.
   */
  /** Buffers `events` (flushing first when the buffer is full); `onBuffered` runs right after, before any later write takes them. */
  const later = async (events: ProtoEvent[], bytes = events.reduce((n, e) => n + sizeOf(e), 0), onBuffered?: () => void): Promise<void> => {
    if (buffered.length > 0 && bufferedBytes + bytes > FLUSH_AT_BYTES) await flush();
    buffer(events);
    onBuffered?.();
    bufferedBytes += bytes; // (durable writes are flushed at once: only what waits is counted)
  };

  /** Records a wait (buffered: it rides with the settlement) and ends the execution: the turn waits. */
  const endToWait = async (payload: Extract<ProtoEvent, { type: 'wait.started' }>['payload'], what: string): Promise<never> => {
    await later([{ type: 'wait.started', payload }]);
    if (turnSpan) waitSpan(turnSpan, { sessionId, executionId, kind: payload.kind, name: payload.name });
    waited = true;
    const err = new WaitingError(executionId, what);
    if (!signal.aborted) controller.abort(err);
    throw err;
  };

  /** Runs a journaled call's `fn` and records its result (buffered), or its error; returns or throws what `fn` did. */
  const runJournaled = async <T>(messageId: string, callId: string, name: string, key: string | undefined, fn: (tc: ToolContext) => Promise<T>): Promise<T> => {
    let output: T;
    const progress = progressThrottle<ToolProgress>(clock, (update) => {
      if (!signal.aborted)
        bus.publish({ id: ids.next('evt'), type: 'tool.progressed', sessionId, time: clock.now(), payload: { executionId, messageId, callId, ...update } });
    });
    try {
      output = await fn({ callId, idempotencyKey: key, signal, progress: (update) => progress.push(checkProgress(name, update)) });
    } catch (err) {
      progress.stop();
      if (signal.aborted) throw signal.reason;
      await later([{ type: 'tool.failed', payload: { executionId, messageId, callId, error: recordedError(err, 'tool') } }]);
      throw err;
    }
    progress.stop(true); // its last report goes out before its result
    const size = encodedSize(output);
    if (size > TOOL_RESULT_INLINE_BYTES && deps.blobs) {
      // stored beside the log before the event that references it (a crash between leaves an orphan for the sweep);
      // the turn lets go of the blobs it keeps first, so its own hold never keeps the put waiting (the next step reads them again)
      blobs.release();
      let outputBlob: BlobRef;
      try {
        outputBlob = await deps.blobs.put(Buffer.from(JSON.stringify(output ?? null)), { mediaType: 'application/json' });
      } catch (err) {
        if (!isSessiondError(err, ErrorCode.PayloadTooLarge)) throw err;
        const tooLarge = new SessiondError(
          ErrorCode.PayloadTooLarge,
          `Tool ${name} returned ${size} bytes, over the limit for one stored result (${(err.details as { maxBytes?: number }).maxBytes} bytes). Return less (a summary, a page, or a reference to where the full result is stored).`,
          { details: { callId, tool: name, size }, cause: err },
        );
        await later([{ type: 'tool.failed', payload: { executionId, messageId, callId, error: recordedError(tooLarge, 'tool') } }]);
        throw tooLarge;
      }
      await later([{ type: 'tool.succeeded', payload: { executionId, messageId, callId, outputBlob } }]);
      return output;
    }
    if (size > DEFAULT_MAX_PAYLOAD_BYTES) {
      // the call ran, but its result cannot be recorded: the call fails with what to do, and the model sees that
      const tooLarge = new SessiondError(
        ErrorCode.PayloadTooLarge,
        `Tool ${name} returned ${size} bytes, over the limit of ${DEFAULT_MAX_PAYLOAD_BYTES} bytes for one recorded result. Return less (a summary, a page, or a reference to where the full result is stored).`,
        { details: { callId, tool: name, size, max: DEFAULT_MAX_PAYLOAD_BYTES } },
      );
      await later([{ type: 'tool.failed', payload: { executionId, messageId, callId, error: recordedError(tooLarge, 'tool') } }]);
      throw tooLarge;
    }
    // measured once, above
    await later([{ type: 'tool.succeeded', payload: { executionId, messageId, callId, output: output as unknown } }], EVENT_BYTES + size);
    return output;
  };

  /** The journal of a call: `started` when it runs now, not when it waits for a person; durable when it has a key. */
  const toolCalled = (messageId: string, callId: string, call: { name: string; input: unknown }, key: string | undefined, started: boolean): ProtoEvent => ({
    type: 'tool.called',
    payload: {
      executionId,
      messageId,
      callId,
      name: call.name,
      input: call.input,
      durable: key !== undefined,
      ...(key ? { idempotencyKey: key } : {}),
      started,
    },
  });

  /** A session tool call's result: the child's answer, or how its turn ended otherwise. */
  const childAnswer = (messageId: string, callId: string, r: SessionCallResult): ProtoEvent =>
    r.outcome === 'succeeded'
      ? { type: 'tool.succeeded', payload: { executionId, messageId, callId, output: r.text } }
      : {
          type: 'tool.failed',
          payload: {
            executionId,
            messageId,
            callId,
            error: {
              type: 'session_call',
              name: `child ${r.outcome}`,
              message:
                r.outcome === 'timed_out'
                  ? `session ${r.sessionId} did not answer in time (timeoutMs); its turn goes on`
                  : `session ${r.sessionId}'s turn ${r.outcome}${r.error ? `: ${r.error}` : ''}${r.text ? ` (its last answer: ${r.text})` : ''}`,
            },
          },
        };

  /** A session tool call refused before it waited (a cycle, a bad session id): recorded as the call's failure (`journaled`: its `tool.called` is in). */
  const refusedToolCall = (t: NonNullable<SessionCall['asToolCall']>, err: unknown, journaled = false): Promise<void> =>
    later([
      ...(journaled ? [] : [toolCalled(t.messageId, t.callId, { name: t.tool, input: t.input }, undefined, true)]),
      { type: 'tool.failed', payload: { executionId, messageId: t.messageId, callId: t.callId, error: recordedError(err, 'tool') } },
    ]);

  /** Usage this turn recorded and has not appended yet (its buffered step and compaction ends). */
  const unrecorded = (): Usage => {
    let u: Usage = { inputTokens: 0, outputTokens: 0 };
    for (const e of buffered) if ((e.type === 'step.ended' || e.type === 'compaction.completed') && e.payload.usage) u = addUsage(u, e.payload.usage);
    return u;
  };

  /**
   * The budget boundary, before a model call: a session that has spent its budget stops
   * the turn here (`BudgetExceededError`, the turn settles failed `budget_exceeded`). Spend comes
   * from the log (a recovered turn counts what its predecessor recorded) plus what this turn buffered.
   */
  const checkBudget = (context: SessionContext): Promise<void> | undefined => {
    const tenant = deps.tenant ?? null;
    const stop = (over: Exceeded | undefined): void => {
      if (!over) return;
      const err = new BudgetExceededError(sessionId, over);
      if (!signal.aborted) controller.abort(err);
      throw err;
    };
    stop(sessionExceeded(context, unrecorded()));
    // the tenant's record is read only for a session with a tenant (no await otherwise)
    if (deps.tenantBudgets && tenant !== null) return deps.tenantBudgets.read(tenant).then((b) => stop(tenantExceeded(tenant, b)));
    return undefined;
  };

  /**
   * A model call's usage, priced, counted into its tenant's budget (when it has one) before the
   * turn records it: what the log holds was counted, once (the call's message id keeps a retry out).
   */
  const spent = (messageId: string, model: string | undefined, usage: Usage | undefined): Usage | Promise<Usage> | undefined => {
    if (!usage) return undefined;
    const cost = priced(deps.prices, model, usage);
    const tenant = deps.tenant ?? null;
    if (deps.tenantBudgets && tenant !== null) return deps.tenantBudgets.update(tenant, (b) => countCall(b, messageId, cost)).then(() => cost);
    return cost;
  };

  const unknownPhase = (): ProtoEvent[] => (phase === 'unknown' ? [] : [{ type: 'execution.phase', payload: { executionId, phase: 'unknown' } }]);

  const ctx: RunContext = {
    sessionId,
    executionId,
    ownerId,
    inputs,
    signal,
    clock,

    async startStep() {
      await queue; // appends in flight land first: the budget sees what they carry
      const snapshot = await handler.load(sessionId);
      const tenantRead = checkBudget(snapshot.context);
      if (tenantRead) await tenantRead;
      const steer = steeringInputs(
        snapshot.context.pending.filter((s) => !promoted.has(s.inputId)),
        clock.now(),
      );
      const steered = runInputs(steer);
      const messageId = ids.next('msg');
      await later([
        ...steer.map((s): ProtoEvent => ({ type: 'input.promoted', payload: { inputId: s.inputId, executionId } })),
        { type: 'step.started', payload: { executionId, messageId, step: step++ } },
      ]);
      openSteps.add(messageId);
      newestStep = messageId;
      if (turnSpan) chats.set(messageId, startChatSpan(turnSpan, { sessionId, executionId, messageId, step: step - 1 }));
      for (const s of steer) promoted.add(s.inputId);
      inputs.push(...steered);
      return { messageId, steered };
    },

    async blob(ref) {
      if (!deps.blobs)
        throw new SessiondError(
          ErrorCode.NotFound,
          `Blob ${ref.sha256} cannot be read: this worker keeps no blob store (on NATS the operator makes the Object Store bucket SESSIOND_BLOBS with sessiond setup, then restarts the workers).`,
        );
      return await blobs.read(deps.blobs, ref);
    },

    async history() {
      await flush();
      return (await deps.transcripts.of(sessionId)).items;
    },

    delta(messageId, partId, text, kind = 'text') {
      if (signal.aborted) return;
      bus.publish({
        id: ids.next('evt'),
        type: kind === 'text' ? 'text.delta' : 'reasoning.delta',
        sessionId,
        time: clock.now(),
        payload: { executionId, messageId, partId, delta: text },
      });
      // recorded as it streams: the text of a step this turn started, under a part id the log takes
      if (kind === 'text' && openSteps.has(messageId) && partId.length > 0 && partId.length <= 128 && streams.streamed(messageId, partId, text)) armRecord();
    },

    async text(messageId, text, partId = ids.next('prt')) {
      output(messageId, { type: 'text', content: text });
      // the final text replaces what streamed, once it is buffered: a turn stopped before keeps what streamed
      await later([{ type: 'text.completed', payload: { executionId, messageId, partId, text } }], undefined, () => streams.completed(partId));
      return partId;
    },

    async reasoning(messageId, text, partId = ids.next('prt')) {
      output(messageId, { type: 'reasoning', content: text });
      await later([{ type: 'reasoning.completed', payload: { executionId, messageId, partId, text } }]);
      return partId;
    },

    retrying(messageId, attempt, delayMs, error) {
      if (signal.aborted) return;
      bus.publish({
        id: ids.next('evt'),
        type: 'model.retry_scheduled',
        sessionId,
        time: clock.now(),
        payload: { executionId, messageId, attempt, delayMs: Math.round(delayMs), error },
      });
      deps.notice?.({ type: 'model_retry', sessionId, executionId, attempt, delayMs: Math.round(delayMs), error });
      // the request is sent again and streams its parts from the start: what was recorded of them starts over
      if (streams.restart(messageId)) armRecord();
    },

    async endStep(messageId, finish = 'stop', usage?: Usage, model?: string) {
      openSteps.delete(messageId);
      streams.ended(messageId);
      const counted = spent(messageId, model, usage);
      const cost = counted instanceof Promise ? await counted : counted;
      const end = requestEnd(messageId);
      callEnded(messageId, model, undefined);
      const chat = chats.get(messageId);
      chats.delete(messageId);
      if (chat && capture)
        chat.setAttribute(Attr.outputMessages, contentValue([{ role: 'assistant', parts: outputs.get(messageId) ?? [], finish_reason: finish }]));
      outputs.delete(messageId);
      if (chat) endChatSpan(chat, finish, usage, model, end);
      return later([{ type: 'step.ended', payload: { executionId, messageId, finish, ...(cost ? { usage: cost } : {}) } }]);
    },
    failStep: (messageId, error: RecordedError) => {
      openSteps.delete(messageId);
      streams.ended(messageId);
      const end = requestEnd(messageId);
      callEnded(messageId, undefined, error.type);
      const chat = chats.get(messageId);
      chats.delete(messageId);
      outputs.delete(messageId);
      if (chat) failChatSpan(chat, error, end);
      return later([{ type: 'step.failed', payload: { executionId, messageId, error } }]);
    },

    async phase(next) {
      const events: ProtoEvent[] = phase === next ? [] : [{ type: 'execution.phase', payload: { executionId, phase: next } }];
      // `unknown` is the boundary before an external effect: what came before must be durable
      if (next === 'unknown') await durable(events);
      else await later(events);
    },

    flush,

    async tool<T>(messageId: string, call: ToolCall, fn: (tc: ToolContext) => Promise<T>): Promise<T> {
      const callId = call.callId ?? ids.next('call');
      const key = call.durable === true ? (call.idempotencyKey ?? idempotencyKey(sessionId, executionId, callId)) : undefined;
      return traced({ name: call.name, callId, durable: key !== undefined, messageId, input: call.input }, async () => {
        // journaled before the side effect starts; the phase becomes unknown in the same append
        await durable([...unknownPhase(), toolCalled(messageId, callId, call, key, true)]);
        return runJournaled(messageId, callId, call.name, key, fn);
      });
    },

    waits,

    async requestApproval(messageId, call) {
      const callId = call.callId ?? ids.next('call');
      const key = call.durable === true ? idempotencyKey(sessionId, executionId, callId) : undefined;
      await later([
        toolCalled(messageId, callId, call, key, false),
        { type: 'wait.started', payload: { executionId, kind: 'approval', name: callId, messageId, callId, tool: call.name, input: call.input } },
      ]);
      if (turnSpan) waitSpan(turnSpan, { sessionId, executionId, kind: 'approval', name: callId, tool: call.name });
      output(messageId, { type: 'tool_call', id: callId, name: call.name, arguments: call.input });
      waited = true;
      return callId;
    },

    async runApproved<T>(callId: string, fn: (tc: ToolContext) => Promise<T>): Promise<T> {
      const w = waits.find((x) => x.kind === 'approval' && x.callId === callId);
      if (w?.outcome !== 'approved' || w.started || w.messageId === null || w.tool === null) {
        const is = !w ? 'not one this turn asked a person about' : w.started ? 'already started (it never runs twice)' : `${w.outcome ?? 'not yet decided'}`;
        throw new SessiondError(
          ErrorCode.InvalidOption,
          `Call ${callId} of session ${sessionId} cannot run as approved: it is ${is}. Run only the calls in ctx.waits with outcome approved and started false.`,
        );
      }
      const { messageId, tool } = w;
      return traced({ name: tool, callId, durable: w.idempotencyKey !== null && w.idempotencyKey !== undefined, messageId, input: w.input }, async () => {
        await durable([...unknownPhase(), { type: 'tool.started', payload: { executionId, messageId, callId } }]);
        return runJournaled(messageId, callId, tool, w.idempotencyKey ?? undefined, fn);
      });
    },

    async waitFor<T>(name: string, options: { timeoutMs?: number } = {}): Promise<SignalResult<T>> {
      checkWaitName(name);
      const w = waits.find((x) => x.kind === 'signal' && x.name === name);
      if (w?.outcome === 'delivered') return { outcome: 'delivered', data: w.data as T };
      if (w?.outcome === 'timed_out') return { outcome: 'timed_out' };
      const timeout = options.timeoutMs;
      if (timeout !== undefined && (!Number.isInteger(timeout) || timeout < 1))
        throw new SessiondError(
          ErrorCode.InvalidOption,
          `waitFor(${JSON.stringify(name)}): timeoutMs must be a whole number of milliseconds >= 1, not ${String(timeout)}.`,
        );
      return endToWait({ executionId, kind: 'signal', name, ...(timeout === undefined ? {} : { until: clock.now() + timeout }) }, `signal ${name}`);
    },

    async sleep(ms: number): Promise<void> {
      if (!Number.isInteger(ms) || ms < 0) throw new SessiondError(ErrorCode.InvalidOption, `sleep(${String(ms)}): use a whole number of milliseconds >= 0.`);
      const name = `sleep-${++sleeps}`;
      const w = waits.find((x) => x.kind === 'timer' && x.name === name);
      if (w?.outcome === 'elapsed') return;
      await endToWait({ executionId, kind: 'timer', name, until: clock.now() + ms }, `timer ${name}`);
    },

    async callSession(name, call): Promise<SessionCallResult> {
      const asTool = call?.asToolCall;
      try {
        checkSessionCall(sessionId, name, call);
      } catch (err) {
        if (asTool) await refusedToolCall(asTool, err);
        throw err;
      }
      const child = call.sessionId;
      const w = waits.find((x) => x.kind === 'session' && x.name === name);
      if (w?.child && w.outcome !== null && w.outcome !== 'cancelled') {
        if (w.child.sessionId !== child)
          throw new SessiondError(
            ErrorCode.InvalidOption,
            `callSession(${JSON.stringify(name)}) called session ${w.child.sessionId} earlier in this turn, not ${child}: a call's name is its key in the turn; give each call its own name.`,
          );
        const inputId = w.child.inputId;
        const end = w.outcome === 'timed_out' ? undefined : (w.data as ChildTurnEnd);
        const result: SessionCallResult = end
          ? {
              outcome: end.outcome,
              text: end.text,
              sessionId: child,
              inputId,
              executionId: end.executionId,
              ...(end.error === undefined ? {} : { error: end.error }),
            }
          : { outcome: 'timed_out', text: '', sessionId: child, inputId };
        if (w.callId !== null && w.messageId !== null && !w.started && !answeredCalls.has(w.callId)) {
          answeredCalls.add(w.callId);
          await later([
            { type: 'tool.started', payload: { executionId, messageId: w.messageId, callId: w.callId } },
            childAnswer(w.messageId, w.callId, result),
          ]);
        }
        return result;
      }
      if (!deps.callChild)
        throw new SessiondError(
          ErrorCode.InvalidOption,
          `callSession(${JSON.stringify(name)}): this run context cannot admit into other sessions (run the turn on a sessiond worker).`,
        );
      calling++;
      if (!callGroup) {
        let reject!: (err: unknown) => void;
        const promise = new Promise<never>((_, r) => (reject = r));
        promise.catch(() => undefined); // a call that returns it is awaited; the group's end is not an unhandled rejection
        callGroup = { promise, reject, waits: 0, plain: 0 };
      }
      const group = callGroup;
      if (!asTool) group.plain++;
      /**
       * The last call of the group ends it: the turn waits when any call recorded its wait, else the
       * group fails with `err`. A group of tool calls only (the model runner's) leaves the signal
       * alone: the runner ends its step, then lets the `WaitingError` through.
       */
      const endGroup = (err: unknown): unknown => {
        if (callGroup === group) callGroup = undefined;
        let end = err;
        if (group.waits > 0) {
          end = new WaitingError(executionId, 'its session calls');
          if (!signal.aborted && group.plain > 0) controller.abort(end);
        }
        group.reject(end);
        return end;
      };
      let recorded = false;
      try {
        const turnId = handler.cached(sessionId)?.context.execution?.turnId ?? executionId;
        const inputId = childInputId(sessionId, turnId, name);
        // a session tool call is journaled before its child is admitted, keyed by its name (the child input
        // derives from it): a continuation of a turn whose worker died here awaits that same child (model-runner.ts)
        const journal = asTool
          ? durable([...unknownPhase(), toolCalled(asTool.messageId, asTool.callId, { name: asTool.tool, input: asTool.input }, name, false)]).then(() => {
              recorded = true;
            })
          : undefined;
        await Promise.all([journal, refuseCycle(async (id) => (await handler.load(id)).context, sessionId, child)]);
        const receipt = await deps.callChild(child, {
          id: inputId,
          prompt: call.prompt,
          ...(call.tags === undefined ? {} : { tags: call.tags }),
          ...(deps.tenant ? { owner: deps.tenant } : {}),
          caller: sessionId,
        });
        if (receipt.wake && !called.includes(child)) called.push(child);
        const until = call.timeoutMs === undefined ? {} : { until: clock.now() + call.timeoutMs };
        const tool = asTool ? { messageId: asTool.messageId, callId: asTool.callId, tool: asTool.tool, input: asTool.input } : {};
        await later([{ type: 'wait.started', payload: { executionId, kind: 'session', name, child: { sessionId: child, inputId }, ...until, ...tool } }]);
        group.waits++;
        waited = true;
      } catch (err) {
        if (asTool && !signal.aborted) await refusedToolCall(asTool, err, recorded).catch(() => undefined);
        if (--calling === 0) endGroup(err);
        throw err;
      }
      if (--calling > 0) return group.promise;
      throw endGroup(undefined);
    },

    async modelCall(call) {
      // the newest open step's call (a retry asks again: its first request counts; its last one's end)
      const step = newestStep !== undefined && openSteps.has(newestStep) ? newestStep : undefined;
      let measured = step === undefined ? undefined : calls.get(step);
      if (step !== undefined && !measured) {
        measured = { at: clock.now(), provider: call.provider, model: call.model };
        calls.set(step, measured);
        const chat = chats.get(step);
        if (chat) chatModel(chat, call.provider, call.model);
        if (chat && capture && call.input) {
          const sent = call.input();
          if (sent.system) chat.setAttribute(Attr.systemInstructions, contentValue([{ type: 'text', content: sent.system }]));
          chat.setAttribute(Attr.inputMessages, contentValue(sent.messages));
        }
      }
      const gate = deps.modelCalls;
      let slot: ModelCallSlot = FREE_SLOT;
      if (gate) {
        if (signal.aborted) throw signal.reason;
        const request = { sessionId, executionId, tenant: deps.tenant ?? null, provider: call.provider, model: call.model };
        const waiting = (w: WaitingCall) => deps.notice?.({ type: 'capacity_wait', sessionId, executionId, scopes: w.scopes });
        slot = await gate.acquire(request, signal, waiting);
      }
      if (!measured) return slot;
      const timed = measured;
      return {
        release: () => {
          timed.ended = { at: clock.now(), perf: performance.now() };
          return slot.release();
        },
        throttled: (ms) => slot.throttled(ms),
      };
    },

    async compact(reason, summarize) {
      await queue;
      await checkBudget((await handler.load(sessionId)).context); // the summary is a model call
      const messageId = ids.next('msg');
      await durable([{ type: 'compaction.started', payload: { executionId, messageId, reason } }]); // the summary is a model call
      const result = await summarize();
      const { summary, usage, model } = typeof result === 'string' ? { summary: result, usage: undefined, model: undefined } : result;
      const counted = spent(messageId, model, usage);
      const cost = counted instanceof Promise ? await counted : counted;
      await later([{ type: 'compaction.completed', payload: { executionId, messageId, summary, ...(cost ? { usage: cost } : {}) } }]);
      return summary;
    },
  };
  return {
    ctx,
    waited: () => waited,
    called: () => [...called],
    async drain() {
      // a step the turn never ended (stopped, handed back): its model call ends with the turn
      for (const messageId of [...calls.keys()]) callEnded(messageId, undefined, 'interrupted');
      for (const chat of chats.values()) failChatSpan(chat, { type: 'interrupted', message: 'the turn stopped before this model call ended' });
      chats.clear();
      await queue;
      clock.clearTimeout(recordTimer);
      recordTimer = undefined;
      // a turn handed back or failed keeps all that streamed of its open step
      blobs.release();
      const events = streams.dirty ? [...buffered, ...streams.take()] : buffered;
      buffered = [];
      bufferedBytes = 0;
      return events;
    },
  };
}

/** A tool's progress as the live event carries it; what cannot be one is refused, saying what the tool sent. */
function checkProgress(tool: string, update: ToolProgress): ToolProgress {
  const { progress, total, message } = update ?? ({} as ToolProgress);
  const bad = (why: string) =>
    new SessiondError(ErrorCode.InvalidOption, `Tool ${tool} reported progress ${why}: use ctx.progress({ progress: 3, total: 10, message: 'page 3 of 10' }).`);
  if (typeof progress !== 'number' || !Number.isFinite(progress) || progress < 0) throw bad(`${String(progress)} (progress must be a number >= 0)`);
  if (total !== undefined && (typeof total !== 'number' || !Number.isFinite(total) || total <= 0))
    throw bad(`of total ${String(total)} (total must be a number > 0)`);
  if (message !== undefined && typeof message !== 'string') throw bad('with a message that is not a string');
  return { progress, ...(total === undefined ? {} : { total }), ...(message === undefined ? {} : { message: message.slice(0, 1000) }) };
}
