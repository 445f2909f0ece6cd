/**
 * The handle a runner writes through. Every write is a `record` command decided by the session
 * machine against the owner's claim and appended with the fencing sequence, one at a time. A
 * refused write (lease lost, cancelled) aborts the run: the runner sees `ClaimLostError` or the
 * cancellation reason, and nothing it tries afterwards is written.
 */
import type { Clock } from '../clock.ts';
import type { IdSource } from '../ids.ts';
import type { LiveBus } from '../events/live-bus.ts';
import type { ExecutionPhase, RecordedError } from '../events/catalog.ts';
import type { ProtoEvent } from '../machines/commands.ts';
import { Refusal } from '../machines/commands.ts';
import type { RunContext, RunInput, ToolCall, ToolContext } from '../runner/types.ts';
import type { CommandHandler } from './command-handler.ts';
import { ClaimLostError, isRefusal } from './errors.ts';
import { runInputs, steeringInputs } from './inputs.ts';
import { recordedError } from './recorded-error.ts';

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
}

/** The idempotency key a durable tool call carries: stable across retries of the same call. */
export function idempotencyKey(sessionId: string, executionId: string, callId: string): string {
  return `${sessionId}:${executionId}:${callId}`;
}

export function createRunContext(deps: RunContextDeps): RunContext {
  const { handler, clock, ids, bus, sessionId, executionId, ownerId, controller } = deps;
  const signal = controller.signal;
  let queue: Promise<unknown> = Promise.resolve();
  let step = 0;
  const inputs = [...deps.inputs];

  const write = (events: ProtoEvent[]): Promise<void> => {
    const next = queue.then(async () => {
      if (signal.aborted) throw signal.reason;
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

  const currentPhase = (): ExecutionPhase | undefined => handler.cached(sessionId)?.context.execution?.phase;

  const ctx: RunContext = {
    sessionId, executionId, ownerId, inputs, signal, clock,

    async startStep() {
      const snapshot = await handler.load(sessionId);
      const steer = steeringInputs(snapshot.context.pending);
      const steered = runInputs(steer);
      const messageId = ids.next('msg');
      await write([
        ...steer.map((s): ProtoEvent => ({ type: 'input.promoted', payload: { inputId: s.inputId, executionId } })),
        { type: 'step.started', payload: { executionId, messageId, step: step++ } },
      ]);
      inputs.push(...steered);
      return { messageId, steered };
    },

    delta(messageId, partId, text) {
      if (signal.aborted) return;
      bus.publish({ id: ids.next('evt'), type: 'text.delta', sessionId, time: clock.now(), payload: { executionId, messageId, partId, delta: text } });
    },

    async text(messageId, text, partId = ids.next('prt')) {
      await write([{ type: 'text.completed', payload: { executionId, messageId, partId, text } }]);
      return partId;
    },

    endStep: (messageId, finish = 'stop') => write([{ type: 'step.ended', payload: { executionId, messageId, finish } }]),
    failStep: (messageId, error: RecordedError) => write([{ type: 'step.failed', payload: { executionId, messageId, error } }]),

    async phase(phase) {
      if (currentPhase() === phase) return;
      await write([{ type: 'execution.phase', payload: { executionId, phase } }]);
    },

    async tool<T>(messageId: string, call: ToolCall, fn: (tc: ToolContext) => Promise<T>): Promise<T> {
      const callId = call.callId ?? ids.next('call');
      const durable = call.durable === true;
      const key = durable ? idempotencyKey(sessionId, executionId, callId) : undefined;
      // journaled before the side effect starts; the phase becomes unknown in the same append
      await write([
        ...(currentPhase() === 'unknown' ? [] : [{ type: 'execution.phase', payload: { executionId, phase: 'unknown' } } as ProtoEvent]),
        { type: 'tool.called', payload: { executionId, messageId, callId, name: call.name, input: call.input, durable, ...(key ? { idempotencyKey: key } : {}) } },
        { type: 'tool.started', payload: { executionId, messageId, callId } },
      ]);
      let output: T;
      try {
        output = await fn({ callId, idempotencyKey: key, signal });
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        await write([{ type: 'tool.failed', payload: { executionId, messageId, callId, error: recordedError(err, 'tool') } }]);
        throw err;
      }
      await write([{ type: 'tool.succeeded', payload: { executionId, messageId, callId, output: output as unknown } }]);
      return output;
    },

    async compact(reason, summarize) {
      const messageId = ids.next('msg');
      await write([{ type: 'compaction.started', payload: { executionId, messageId, reason } }]);
      const summary = await summarize();
      await write([{ type: 'compaction.completed', payload: { executionId, messageId, summary } }]);
      return summary;
    },
  };
  return ctx;
}
