/**
 * The execution service of one worker process: it claims sessions, runs their turns with the runner,
 * heartbeats the lease, and settles. Every decision is the session machine's; every write is a fenced
 * append. `wake`, `resume` (says why not), `cancel` (wins over any later settlement), `awaitIdle`.
 */
import { cancelExecution, type CancelResult } from './cancel.ts';
import type { ActorOptions } from '../sessions/actor.ts';
import { systemClock, type Clock, type TimerHandle } from '../clock.ts';
import { randomIds, validateId, type IdSource } from '../ids.ts';
import {
  ErrorCode,
  SessiondError,
  isSessiondError,
  hasErrorCode,
  messageOf,
  CancelledError,
  ClaimLostError,
  CommandRefusedError,
  ShutdownError,
  TurnTimeoutError,
  WaitingError,
  isRefusal,
  recordedError,
} from '../errors.ts';
import type { EventLog } from '../events/event-log.ts';
import type { RecordedError } from '../events/catalog.ts';
import { interruptedTurn, type InterruptedTurn } from '../recovery/interrupted.ts';
import { nullLiveBus, type LiveBus } from '../events/live-bus.ts';
import type { SnapshotStore } from '../machines/snapshot-store.ts';
import type { ProtoEvent, Refusal } from '../machines/commands.ts';
import { stateOf, type SessionSnapshot } from '../machines/decider.ts';
import type { RunInput, Runner } from '../runner/types.ts';
import type { PendingInput } from '../machines/session-context.ts';
import { CommandHandler, type Build } from './command-handler.ts';
import { inputsForTurn, runInputs } from '../input/turn.ts';
import { createRunContext } from './run-context.ts';
import { Transcripts } from './transcripts.ts';
import { checkKeys, optionalWholeNumber, wholeNumber } from '../options.ts';
import type { Span } from '@opentelemetry/api';
import { Attr, appended, claimSpan, endTurnSpan, failed, spansOn, startTurnSpan, traceparentOf, turnTrace, withSpan } from '../observability/tracing.ts';

/** Every option of the execution service (anything else is refused as a likely typo). */
export const EXECUTION_OPTIONS = [
  'log',
  'runner',
  'clock',
  'ids',
  'ownerId',
  'leaseMs',
  'heartbeatMs',
  'turnTimeoutMs',
  'maxRunningTurns',
  'bus',
  'snapshots',
  'onNotice',
  'limits',
  'urls',
  'modelCalls',
  'prices',
  'tenantBudgets',
  'blobs',
  'blobGraceMs',
  'blobAccess',
] as const;
import { parseLimits, type SessionLimits } from '../input/limits.ts';
import { urlGuard, type UrlGuard, type UrlOptions } from '../input/url-guard.ts';
import { RunRegistry } from './registry.ts';
import { TurnSlots } from './turn-slots.ts';
import { admitInput, type AdmissionBlobs } from '../input/admit.ts';
import type { BlobAccess } from '../blobs/blob-grants.ts';
import type { ModelCallGate } from '../capacity/gate.ts';
import { checkPrices, type Prices } from '../budget/prices.ts';
import type { TenantBudgetStore } from '../budget/tenant-store.ts';
import type { BlobStore } from '../blobs/blob-store.ts';
import { BlobMemory } from '../blobs/blob-memory.ts';
import { MeteredBlobStore } from '../blobs/metered-blob-store.ts';
import { checkGraceMs } from '../blobs/sweep.ts';

export const DEFAULT_LEASE_MS = 30_000;
export const DEFAULT_HEARTBEAT_MS = 10_000;
/** How long a runner aborted at its turn's deadline has to stop before the turn settles failed anyway. */
export const TURN_TIMEOUT_GRACE_MS = 1_000;

export interface ExecutionOptions {
  log: EventLog;
  runner: Runner;
  clock?: Clock;
  ids?: IdSource;
  ownerId?: string;
  leaseMs?: number;
  heartbeatMs?: number;
  /**
   * A turn's deadline: a turn running longer has its runner's signal aborted with `TurnTimeoutError`
   * and settles failed with that error (after `TURN_TIMEOUT_GRACE_MS` for the runner to stop, or at
   * once when it does). Default: none.
   */
  turnTimeoutMs?: number;
  /**
   * Turns this worker runs at once, at most (default: no limit). A session woken past it is not
   * claimed (another worker may take it; `resume` answers `requested`) and starts here, in order,
   * as turns end.
   */
  maxRunningTurns?: number;
  bus?: LiveBus;
  /** Stored session snapshots (openEngine gives the SQLite file's); a cold load starts from them. */
  snapshots?: SnapshotStore;
  /** Plain-words notices of what the service does (the CLI prints them). */
  onNotice?: (notice: Notice) => void;
  /** What a session may hold waiting and what this worker holds in memory (src/input/limits.ts; defaults there). */
  limits?: Partial<SessionLimits>;
  /** Which URLs a prompt may name (src/input/url-guard.ts): default https to public hosts only. */
  urls?: UrlOptions;
  /**
   * Where large prompt parts live, beside the log (src/input/blob-parts.ts); runners read them
   * through `RunContext.blob`. The embedded engine gives its SQLite file's. None: large parts are
   * refused by the prompt's size limit and blob references are refused.
   */
  blobs?: BlobStore;
  /**
   * How long deletes and sweeps keep an unreferenced blob after its content was last put (ms;
   * default one hour, `DEFAULT_BLOB_GRACE_MS`): an admission here whose append comes more than half
   * of it after its blobs were stored marks them again first (src/execution/blob-marks.ts).
   */
  blobGraceMs?: number;
  /** Whether an admission's owner may name a stored blob (src/blobs/blob-grants.ts; openEngine's); absent: any may. */
  blobAccess?: BlobAccess;
  /** The deployment's limits on model calls, shared by its workers (src/capacity/; `RunContext.modelCall`). Default: none. */
  modelCalls?: ModelCallGate;
  /**
   * Model prices in US dollars per million tokens (src/budget/prices.ts; `sessiond start --prices`):
   * a model call's cost is recorded with its usage when its model has a price. Default: none.
   */
  prices?: Prices;
  /**
   * Tenants' budgets, shared by the deployment's workers (src/budget/tenant.ts): a turn of a session
   * with a tenant stops before a model call once the tenant has spent its budget. `openEngine` keeps
   * them in its SQLite file when the log is there; on NATS `sessiond start` passes the KV store.
   */
  tenantBudgets?: TenantBudgetStore;
}

export type Notice =
  | { type: 'claimed'; sessionId: string; executionId: string }
  | { type: 'settled'; sessionId: string; executionId: string; outcome: string; error?: string }
  | { type: 'claim_lost'; sessionId: string; executionId: string }
  | { type: 'cancelled'; sessionId: string; executionId: string }
  | { type: 'refused'; sessionId: string; reason: Refusal; message: string }
  /** No room for another turn here (`maxRunningTurns`): not claimed; it starts when a turn ends, unless another worker takes it. */
  | { type: 'deferred'; sessionId: string; running: number; waiting: number }
  /** A model request failed; it is sent again after `delayMs` (`attempt`: the one that failed). */
  | { type: 'model_retry'; sessionId: string; executionId: string; attempt: number; delayMs: number; error: RecordedError }
  /** A model call waits for room under the deployment's limits (`scopes`: the limits it draws from). */
  | { type: 'capacity_wait'; sessionId: string; executionId: string; scopes: string[] }
  /** A model call ended (its step ended, or failed with `errorType`): `durationMs` from its first request; for the GenAI duration metric, not printed. */
  | {
      type: 'model_call';
      sessionId: string;
      executionId: string;
      provider: string;
      model: string;
      responseModel?: string;
      durationMs: number;
      errorType?: string;
    }
  | { type: 'error'; sessionId: string; message: string };

export type ResumeResult =
  | { status: 'started'; executionId: string }
  | { status: 'running_here'; executionId: string | null }
  | { status: 'nothing_pending' }
  | { status: 'refused'; reason: Refusal; message: string }
  /** Something failed that is not the machine's refusal (the log unreachable, a bug): `code` says what kind. */
  | { status: 'failed'; code: ErrorCode; message: string }
  /** Not claimed for want of room here (`maxRunningTurns`): it starts here when a turn ends, or elsewhere. */
  | { status: 'requested' }
  | { status: 'closed' };

export type { CancelResult } from './cancel.ts';

export class SessionExecution {
  readonly ownerId: string;
  readonly leaseMs: number;
  readonly heartbeatMs: number;
  readonly turnTimeoutMs: number | undefined;
  readonly handler: CommandHandler;
  /** The limits in force (src/input/limits.ts): admissions past them are refused. */
  readonly limits: SessionLimits;
  /** The URL guard admissions here pass (src/input/url-guard.ts). */
  readonly urls: UrlGuard;
  /** The transcripts of the sessions run here, folded between turns (a runner's `history()`). */
  private readonly transcripts: Transcripts;
  readonly registry = new RunRegistry();
  private readonly clock: Clock;
  private readonly ids: IdSource;
  /** Where live events go (text deltas, `turn.interrupted`): the NATS live subjects, an in-process bus, or nowhere. */
  readonly bus: LiveBus;
  private readonly runner: Runner;
  private readonly notice: (n: Notice) => void;
  private readonly loops = new Map<string, Promise<void>>();
  /** Sessions woken while driven here, and the sequence the next look must hold (Infinity: a load). */
  private readonly rewake = new Map<string, number>();
  private closing = false;
  private readonly prices: Prices | undefined;
  /** `maxRunningTurns` at work (undefined: no limit). */
  readonly slots: TurnSlots | undefined;
  /** The deployment's limits on model calls (undefined: none). */
  readonly modelCalls: ModelCallGate | undefined;
  readonly tenantBudgets: TenantBudgetStore | undefined;
  /** Where large prompt parts are kept (undefined: none here); its puts count against `blobMemory`. */
  readonly blobs: BlobStore | undefined;
  /** The bound on blob bytes this worker holds in memory at once (`limits.maxBlobMemoryBytes`). */
  readonly blobMemory: BlobMemory;
  /** The grace period of unreferenced blobs (`blobGraceMs`). */
  readonly blobGraceMs: number;
  /** What admissions here (and a turn's calls of child sessions) check their blobs with. */
  readonly admissionBlobs: AdmissionBlobs;

  constructor(options: ExecutionOptions) {
    checkKeys('SessionExecution', options, EXECUTION_OPTIONS);
    this.clock = options.clock ?? systemClock;
    this.ids = options.ids ?? randomIds;
    this.ownerId = validateId(options.ownerId ?? this.ids.next('own'), 'owner id');
    this.leaseMs = wholeNumber('SessionExecution', 'leaseMs', options.leaseMs, DEFAULT_LEASE_MS, 1, 'milliseconds');
    this.heartbeatMs = wholeNumber('SessionExecution', 'heartbeatMs', options.heartbeatMs, DEFAULT_HEARTBEAT_MS, 1, 'milliseconds');
    this.turnTimeoutMs = optionalWholeNumber('SessionExecution', 'turnTimeoutMs', options.turnTimeoutMs, 1, 'milliseconds');
    const maxRunningTurns = optionalWholeNumber('SessionExecution', 'maxRunningTurns', options.maxRunningTurns, 1, 'turns');
    this.slots = maxRunningTurns === undefined ? undefined : new TurnSlots(maxRunningTurns, (id) => void this.resume(id));
    if (this.heartbeatMs >= this.leaseMs) {
      throw new SessiondError(
        ErrorCode.InvalidOption,
        `Invalid options: heartbeatMs (${this.heartbeatMs}) must be shorter than leaseMs (${this.leaseMs}), ideally a third of it.`,
      );
    }
    this.bus = options.bus ?? nullLiveBus;
    this.runner = options.runner;
    this.notice = options.onNotice ?? (() => {});
    this.limits = parseLimits('SessionExecution', options.limits);
    this.urls = urlGuard(options.urls);
    this.modelCalls = options.modelCalls;
    this.tenantBudgets = options.tenantBudgets;
    this.blobMemory = new BlobMemory(this.limits.maxBlobMemoryBytes, { clock: this.clock });
    // puts count against the bound on blob bytes held at once (reads for model calls count in the turn)
    this.blobs = options.blobs && new MeteredBlobStore(options.blobs, this.blobMemory);
    this.blobGraceMs = checkGraceMs(options.blobGraceMs, 'SessionExecution option blobGraceMs');
    this.admissionBlobs = { store: this.blobs, access: options.blobAccess, graceMs: this.blobGraceMs };
    this.prices = options.prices === undefined ? undefined : checkPrices(options.prices, 'SessionExecution prices');
    this.handler = new CommandHandler(options.log, this.clock, this.ids, {
      maxHeldBytes: this.limits.maxHeldBytes,
      ...(options.snapshots ? { snapshots: options.snapshots } : {}),
    });
    this.transcripts = new Transcripts(options.log);
  }

  get log(): EventLog {
    return this.handler.log;
  }

  /** Claims the session if allowed and runs it in the background. Refusals are silent (see `resume`). */
  async wake(sessionId: string, atSeq?: number): Promise<void> {
    await this.resume(sessionId, atSeq);
  }

  /**
   * Like `wake`, but reports what happened: started, already running here, nothing to do, or refused and why.
   * `atSeq`: the wake is for the event at that sequence (an admission); a cached state holding it is
   * as good as a load (see `drive`), so it is not reloaded from the log.
   */
  async resume(sessionId: string, atSeq?: number): Promise<ResumeResult> {
    validateId(sessionId, 'session id');
    if (this.closing) return { status: 'closed' };
    const mine = this.registry.get(sessionId);
    if (mine) {
      this.slots?.done(sessionId); // driven already: it takes its own slot
      this.rewake.set(sessionId, Math.max(this.rewake.get(sessionId) ?? 0, atSeq ?? Number.POSITIVE_INFINITY));
      return { status: 'running_here', executionId: mine.executionId };
    }
    this.registry.begin(sessionId);
    let first!: (r: ResumeResult) => void;
    const firstResult = new Promise<ResumeResult>((r) => (first = r));
    const loop = this.drive(sessionId, first, atSeq)
      .catch((err) => {
        this.notice({ type: 'error', sessionId, message: messageOf(err) });
        first({ status: 'failed', code: isSessiondError(err) ? err.code : ErrorCode.Internal, message: messageOf(err) });
      })
      .finally(() => {
        this.slots?.done(sessionId);
        // a loop that ended on nothing pending left its places already: a wake since has a new loop there
        if (this.loops.get(sessionId) !== loop) return;
        this.loops.delete(sessionId);
        this.registry.end(sessionId);
      });
    this.loops.set(sessionId, loop);
    return firstResult;
  }

  /**
   * Cancels the session's execution in progress (here or in another process). Cancellation is final.
   * With `executionId`, only that execution: a cancel resent or delivered late never stops a later turn.
   */
  async cancel(sessionId: string, reason?: string, executionId?: string, options: ActorOptions = {}): Promise<CancelResult> {
    // the turns it waits for are cancelled through this service too: a child's runner here stops at once
    const result = await cancelExecution(this.handler, sessionId, reason, executionId, options, (child, why, exec) => this.cancel(child, why, exec, options));
    if (!result.cancelled) return result;
    const run = this.registry.get(sessionId);
    if (run?.executionId === result.executionId && run.controller && !run.controller.signal.aborted) {
      run.controller.abort(new CancelledError(result.executionId, reason));
    }
    this.notice({ type: 'cancelled', sessionId, executionId: result.executionId });
    return result;
  }

  /**
   * Tells live subscribers that a turn's owner is gone and the turn is being recovered
   * (`turn.interrupted`), read from the log: which step was streaming and how much of its text the
   * log holds. Called once the log holds the takeover (a recovery's append, a hand-back's). Never
   * throws: a read that fails is said as an error notice, and nothing is published.
   */
  async announceInterrupted(
    sessionId: string,
    execution: { id: string; ownerId: string; claimedSeq: number },
    reason: InterruptedTurn['reason'],
    continuationInputId: string | null,
  ): Promise<InterruptedTurn | undefined> {
    try {
      const events = await this.log.readSession(sessionId, { afterSeq: Math.max(0, execution.claimedSeq - 1) });
      const payload = interruptedTurn(events, { executionId: execution.id, ownerId: execution.ownerId, reason, continuationInputId });
      this.bus.publish({ id: this.ids.next('evt'), type: 'turn.interrupted', sessionId, time: this.clock.now(), payload });
      return payload;
    } catch (err) {
      this.notice({ type: 'error', sessionId, message: `could not tell live subscribers that execution ${execution.id} was interrupted: ${messageOf(err)}` });
      return undefined;
    }
  }

  /** Resolves when this worker is no longer driving the session. */
  awaitIdle(sessionId: string): Promise<void> {
    return this.registry.whenIdle(sessionId);
  }

  /** The session's state, caught up with the log. */
  /** Drops what this process caches of the session (its state, its transcript): after another process deleted it. */
  forget(sessionId: string): void {
    this.handler.forget(sessionId);
    this.transcripts.forget(sessionId);
  }

  status(sessionId: string): Promise<SessionSnapshot> {
    return this.handler.load(validateId(sessionId, 'session id'));
  }

  /** The sessions this process is driving now (claiming, running or handing back a turn): what `close` waits for. */
  driving(): string[] {
    return [...this.loops.keys()];
  }

  /** Stops taking work; turns in progress here are aborted and handed back (`released`). */
  async close(): Promise<void> {
    this.closing = true;
    for (const run of [...this.registry.all()]) {
      if (run.controller && !run.controller.signal.aborted) run.controller.abort(new ShutdownError());
    }
    await Promise.allSettled([...this.loops.values()]);
  }

  /** Claims and runs turns while the session has pending inputs. */
  private async drive(sessionId: string, first: (r: ResumeResult) => void, atSeq: number | undefined): Promise<void> {
    let reported = false;
    const report = (r: ResumeResult) => {
      if (!reported) first(r);
      reported = true;
    };
    /**
     * The cached snapshot is as current as a load: this worker's own settlement was the last append
     * it made, or (first look) the loop was woken for an event at `atSeq` the cache holds.
     */
    let current = atSeq !== undefined;
    /** The sequence the cached snapshot must hold to be used. */
    let wanted = atSeq ?? 0;
    while (!this.closing) {
      // Anything committed after our settlement could as well have come after a load here: wakes
      // cover it (a wake while driving sets `rewake`, a later one starts a new loop), and anything
      // committed before it made the settlement conflict and catch up. So only a wake forces a load,
      // and a wake for an event the cache holds (an admission this process appended or observed:
      // the cache is the log's state at or after it) does not. The cache never goes back.
      wanted = Math.max(wanted, this.rewake.get(sessionId) ?? 0);
      this.rewake.delete(sessionId);
      let known = current ? this.handler.cached(sessionId) : undefined;
      if (known && known.context.seq < wanted) {
        // woken from the log for an append of this process not yet returned: the append caches it
        await this.handler.writesDone(sessionId);
        known = this.handler.cached(sessionId);
      }
      const snapshot = known && known.context.seq >= wanted ? known : await this.handler.load(sessionId);
      wanted = 0;
      // Nothing to run and nothing in progress: done. An execution in progress goes to the machine,
      // which says why this worker may not take it (live lease, expired and awaiting recovery...).
      if (snapshot.context.pending.length === 0 && (stateOf(snapshot) === 'idle' || stateOf(snapshot) === 'settled')) {
        if (this.rewake.has(sessionId)) continue;
        // end synchronously: a wake arriving after this check starts a new loop instead of being lost
        this.registry.end(sessionId);
        return report({ status: 'nothing_pending' });
      }
      // no room for another turn here: not claimed (another worker may take it); woken when a slot frees
      if (this.slots && !this.slots.take(sessionId)) {
        const { running, waiting } = this.slots.stats;
        this.notice({ type: 'deferred', sessionId, running, waiting });
        return report({ status: 'requested' });
      }
      let ran: { settledHere: boolean } | undefined;
      try {
        ran = await this.claimAndRun(sessionId, report);
      } finally {
        this.slots?.release();
      }
      if (!ran) return;
      current = ran.settledHere;
    }
    report({ status: 'closed' });
  }

  /** Claims the session's next turn and runs it; undefined when there was none to claim here (reported). */
  private async claimAndRun(sessionId: string, report: (r: ResumeResult) => void): Promise<{ settledHere: boolean } | undefined> {
    const executionId = this.ids.next('exe');
    const ownerId = this.ownerId;
    let decidedAt = 0;
    let turn: PendingInput[] = [];
    const claimStart = Date.now();
    /** The turn's span, started when its inputs are known (again when a retried decision finds others): its context is recorded with the start. */
    let span: { span: Span | undefined; parent: string | undefined } | undefined;
    /** No tracer provider registered (no OTEL_*): no span, attribute or context is built for the turn. */
    const spans = spansOn();
    let claimedSeq = 0;
    try {
      // claim, start and the promotion of the turn's inputs: one decision, one append
      const claimed = await this.handler.executeAll(sessionId, [
        (now) => {
          decidedAt = now;
          return { type: 'claim', now, ownerId, executionId, leaseMs: this.leaseMs };
        },
        (now, claimed) => {
          const pending = inputsForTurn(claimed.context.pending, now);
          const where = spans ? turnTrace(pending) : { parent: pending.find((i) => i.traceparent)?.traceparent };
          if (span?.parent !== where.parent || !span)
            span = {
              span: 'context' in where ? startTurnSpan({ sessionId, executionId, ownerId }, where, claimStart) : undefined,
              parent: where.parent,
            };
          const recording = span.span?.isRecording() === true;
          return {
            type: 'start',
            now,
            ownerId,
            executionId,
            ...(recording ? { traceparent: traceparentOf(span.span!) } : {}),
            ...(where.parent ? { parentTraceparent: where.parent } : {}),
          };
        },
        (now, started) => {
          turn = inputsForTurn(started.context.pending, now);
          return {
            type: 'record',
            now,
            ownerId,
            executionId,
            events: turn.map((i): ProtoEvent => ({ type: 'input.promoted', payload: { inputId: i.inputId, executionId } })),
          };
        },
      ]); // decided on the snapshot just loaded; an accepted claim is checked by the append
      claimedSeq = claimed.events.find((e) => e.type === 'execution.claimed')?.seq ?? claimed.snapshot.context.seq;
      // The lease runs from the decision, but the write may have waited (a locked database, a slow
      // disk or server): a claim that lands with much of its lease spent renews before running,
      // or is let go when it landed already expired (the sweep recovers it; nothing ran).
      if (this.clock.now() - decidedAt > this.heartbeatMs / 2) {
        await this.handler.execute(sessionId, (now) => ({ type: 'renew', now, ownerId, executionId }));
      }
    } catch (err) {
      // the turn never ran: its span is not ended (never exported); the claim's says why
      if (spans) {
        const refused = claimSpan({ sessionId, executionId, ownerId }, claimStart, { [Attr.outcome]: isRefusal(err) ? `refused: ${err.reason}` : 'failed' });
        if (!isRefusal(err)) failed(refused, err);
        refused.end();
      }
      if (isRefusal(err, 'nothing_pending')) {
        report({ status: 'nothing_pending' });
        return undefined;
      }
      if (isRefusal(err)) {
        this.notice({ type: 'refused', sessionId, reason: err.reason, message: err.message });
        report({ status: 'refused', reason: err.reason, message: err.message });
        return undefined;
      }
      throw err;
    }
    const inputs = runInputs(turn);
    const continues = inputs.find((i) => i.continues)?.continues?.executionId;
    const turnSpan = span?.span;
    if (turnSpan) {
      appended(turnSpan, { [Attr.seq]: claimedSeq, [Attr.inputIds]: inputs.map((i) => i.inputId), ...(continues ? { [Attr.continues]: continues } : {}) });
      claimSpan({ sessionId, executionId, ownerId }, claimStart, { [Attr.seq]: claimedSeq, [Attr.outcome]: 'claimed' }, turnSpan).end();
    }
    this.notice({ type: 'claimed', sessionId, executionId });
    report({ status: 'started', executionId });
    return { settledHere: await this.runTurn(sessionId, executionId, inputs, turnSpan) };
  }

  /** Runs a turn that is claimed, started and has its inputs promoted; true when its settlement was appended here. */
  private async runTurn(sessionId: string, executionId: string, inputs: RunInput[], span: Span | undefined): Promise<boolean> {
    let outcome = 'failed';
    let failure: unknown;
    const controller = new AbortController();
    this.registry.attach(sessionId, executionId, controller);
    // a close that came while the claim was being written aborted the runs it saw, not this one
    if (this.closing) controller.abort(new ShutdownError());
    const stopHeartbeat = this.startHeartbeat(sessionId, executionId, controller);
    const ownerId = this.ownerId;
    const turn = createRunContext({
      handler: this.handler,
      clock: this.clock,
      ids: this.ids,
      bus: this.bus,
      sessionId,
      executionId,
      ownerId,
      inputs,
      controller,
      ...(span ? { span } : {}),
      transcripts: this.transcripts,
      notice: this.notice,
      tenant: this.handler.cached(sessionId)?.context.ownedBy ?? null,
      ...(this.modelCalls ? { modelCalls: this.modelCalls } : {}),
      ...(this.tenantBudgets ? { tenantBudgets: this.tenantBudgets } : {}),
      ...(this.prices ? { prices: this.prices } : {}),
      callChild: (child, request) => admitInput(this.handler, child, request, this.limits, this.urls, this.admissionBlobs),
      ...(this.blobs ? { blobs: this.blobs, blobMemory: this.blobMemory } : {}),
    });
    const deadline = this.startDeadline(executionId, controller);
    try {
      const run = span ? withSpan(span, () => this.runner(turn.ctx)) : this.runner(turn.ctx);
      await (deadline ? Promise.race([run, deadline.passed]) : run);
      if (controller.signal.aborted) throw controller.signal.reason;
      // a turn that recorded a wait (an approval asked for) ends its execution waiting: it holds nothing until it resumes
      const ended = turn.waited() ? 'waiting' : 'succeeded';
      outcome = ended;
      outcome = await this.settle(sessionId, executionId, ended, await turn.drain());
      return outcome === ended;
    } catch (err) {
      failure = controller.signal.aborted ? controller.signal.reason : err;
      outcome = await this.afterFailure(sessionId, executionId, controller, err, () => turn.drain().catch(() => []));
      return false;
    } finally {
      if (span) endTurnSpan(span, outcome, failure);
      deadline?.stop();
      stopHeartbeat();
      this.registry.detach(sessionId);
      // the children it called run once its wait is in the log (a cycle check sees it); the sweep wakes them if this does not
      for (const child of turn.called()) void this.wake(child).catch(() => undefined);
    }
  }

  /** `buffered`: the runner's writes not yet appended; they ride with a settlement (lost with the claim). */
  private async afterFailure(
    sessionId: string,
    executionId: string,
    controller: AbortController,
    err: unknown,
    buffered: () => Promise<ProtoEvent[]>,
  ): Promise<string> {
    const reason = controller.signal.aborted ? controller.signal.reason : err;
    if (reason instanceof ClaimLostError || isRefusal(reason, 'claim_lost')) {
      this.notice({ type: 'claim_lost', sessionId, executionId });
      return 'claim_lost';
    }
    if (reason instanceof CancelledError || isRefusal(reason, 'cancelled')) return 'cancelled'; // already settled by the cancellation
    if (reason instanceof WaitingError) {
      return this.settle(sessionId, executionId, 'waiting', await buffered());
    }
    if (reason instanceof ShutdownError) {
      return this.settle(sessionId, executionId, 'released', await buffered());
    }
    return this.settle(sessionId, executionId, 'failed', await buffered(), reason);
  }

  /** Settles the turn (the runner's buffered writes first, in the same append); says the outcome appended, or why none was (`claim_lost`, `cancelled`, `already_settled`). */
  private async settle(
    sessionId: string,
    executionId: string,
    outcome: 'succeeded' | 'failed' | 'released' | 'waiting',
    buffered: ProtoEvent[],
    error?: unknown,
  ): Promise<string> {
    const ownerId = this.ownerId;
    try {
      const continuationInputId = outcome === 'released' ? `inp_handback_${executionId}` : undefined;
      const settle: Build = (now) => ({
        type: 'settle',
        now,
        ownerId,
        executionId,
        outcome,
        ...(error === undefined ? {} : { error: recordedError(error, settledErrorType(error)) }),
        ...(continuationInputId ? { continuationInputId } : {}),
      });
      const { snapshot } = await this.handler.executeAll(
        sessionId,
        buffered.length === 0 ? [settle] : [(now) => ({ type: 'record', now, ownerId, executionId, events: buffered }), settle],
      );
      this.notice({ type: 'settled', sessionId, executionId, outcome, ...(error === undefined ? {} : { error: messageOf(error) }) });
      const exec = snapshot.context.execution;
      // handed back: the next worker continues it; live subscribers hear it now, not at the next claim
      if (continuationInputId && exec?.id === executionId) await this.announceInterrupted(sessionId, exec, 'handed_back', continuationInputId);
      return outcome;
    } catch (err) {
      // Cancellation wins: a late settlement after a cancel changes nothing. A lost claim cannot settle.
      if (isRefusal(err, 'cancelled', 'already_settled')) return err.reason;
      if (isRefusal(err, 'claim_lost')) {
        this.notice({ type: 'claim_lost', sessionId, executionId });
        return 'claim_lost';
      }
      throw err;
    }
  }

  /**
   * The turn's deadline: at `turnTimeoutMs` the runner's signal is aborted with `TurnTimeoutError`;
   * `passed` resolves `TURN_TIMEOUT_GRACE_MS` later, so a runner that ignores its signal does not
   * hold the turn (it settles failed; the runner's later writes are refused).
   */
  private startDeadline(executionId: string, controller: AbortController): { passed: Promise<void>; stop: () => void } | undefined {
    const ms = this.turnTimeoutMs;
    if (ms === undefined) return undefined; // no deadline: nothing added to the turn
    let timer: TimerHandle | undefined;
    const passed = new Promise<void>((resolve) => {
      timer = this.clock.setTimeout(() => {
        if (!controller.signal.aborted) controller.abort(new TurnTimeoutError(executionId, ms));
        timer = this.clock.setTimeout(resolve, TURN_TIMEOUT_GRACE_MS);
      }, ms);
    });
    return { passed, stop: () => this.clock.clearTimeout(timer) };
  }

  /** Renews the lease every `heartbeatMs`; a refused renew aborts the runner with the claim-lost defect. */
  private startHeartbeat(sessionId: string, executionId: string, controller: AbortController): () => void {
    let timer: TimerHandle | undefined;
    let stopped = false;
    const ownerId = this.ownerId;
    const beat = async () => {
      if (stopped || controller.signal.aborted) return;
      try {
        await this.handler.execute(sessionId, (now) => ({ type: 'renew', now, ownerId, executionId }));
      } catch (err) {
        if (err instanceof CommandRefusedError) {
          if (!controller.signal.aborted) controller.abort(err.reason === 'cancelled' ? new CancelledError(executionId) : new ClaimLostError(executionId, err));
          return;
        }
        // An I/O failure: keep trying while the lease may still be live; past expiry the claim is lost.
        const expiresAt = this.handler.cached(sessionId)?.context.execution?.expiresAt ?? 0;
        if (this.clock.now() >= expiresAt) {
          if (!controller.signal.aborted) controller.abort(new ClaimLostError(executionId, err));
          return;
        }
      }
      if (!stopped) timer = this.clock.setTimeout(() => void beat(), this.heartbeatMs);
    };
    timer = this.clock.setTimeout(() => void beat(), this.heartbeatMs);
    return () => {
      stopped = true;
      this.clock.clearTimeout(timer);
    };
  }
}

/** The recorded type of a turn's failure: the code of the failures a turn settles with by name (a deadline, a step limit), else unknown. */
function settledErrorType(error: unknown): string | undefined {
  for (const code of [ErrorCode.TurnTimeout, ErrorCode.StepLimit, ErrorCode.BudgetExceeded]) if (hasErrorCode(error, code)) return code;
  return undefined;
}
