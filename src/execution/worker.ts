/**
 * A worker: the execution service plus a subscription to the log, so that work admitted by any
 * process reaches it. It wakes sessions whose admitted inputs ask for a wake, aborts local runs
 * that another process cancelled, and folds foreign events into the snapshot cache. At start it
 * catches up from the beginning of the log (or a given position) and wakes what is pending.
 */
import type { SessionEvent } from '../events/envelope.ts';
import type { Subscription } from '../events/event-log.ts';
import { messageOf } from '../errors.ts';
import { CancelledError, type SessionExecution } from './session-execution.ts';
import { localRun } from './registry.ts';

export interface WorkerOptions {
  /** Start reading the log after this position (default 0: catch up with everything). */
  after?: number;
  /** Called for every committed event, after the worker handled it (the CLI prints them). */
  onEvent?: (event: SessionEvent) => void;
  onError?: (err: unknown) => void;
}

export interface Worker {
  readonly execution: SessionExecution;
  /** Log position the worker has handled. */
  readonly position: number;
  /** Stops the subscription and closes the execution service (turns in progress are handed back). */
  stop(): Promise<void>;
}

export function startWorker(execution: SessionExecution, options: WorkerOptions = {}): Worker {
  const onError = options.onError ?? ((err) => process.stderr.write(`sessiond: worker error: ${messageOf(err)}\n`));
  const wakeLater = new Set<string>();
  let catchingUp = true;
  let subscription: Subscription | undefined;

  const handle = (events: SessionEvent[]) => {
    execution.handler.observe(events);
    for (const e of events) {
      if (e.type === 'input.admitted' && e.payload.wake) wakeLater.add(e.sessionId);
      if (e.type === 'execution.cancelled') {
        const run = localRun(execution.registry, e.sessionId);
        if (run?.executionId === e.payload.executionId && run.controller && !run.controller.signal.aborted) {
          run.controller.abort(new CancelledError(e.payload.executionId, e.payload.reason));
        }
      }
      options.onEvent?.(e);
    }
  };

  const wakeAll = () => {
    for (const sessionId of wakeLater) {
      wakeLater.delete(sessionId);
      execution.wake(sessionId).catch(onError);
    }
  };

  subscription = execution.log.subscribe({
    after: options.after ?? 0,
    onBatch: async (events) => {
      handle(events);
      if (catchingUp && (await execution.log.head()) > events[events.length - 1]!.position!) return; // wake once caught up
      catchingUp = false;
      wakeAll();
    },
    onError,
  });

  return {
    execution,
    get position() {
      return subscription?.position ?? 0;
    },
    async stop() {
      await subscription?.close();
      await execution.close();
    },
  };
}
