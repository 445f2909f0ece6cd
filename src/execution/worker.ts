/**
 * A worker: the execution service plus a log subscription (wakes what any process admitted, aborts
 * runs cancelled elsewhere, folds foreign events) and, with a `projection`, the projector and the
 * recovery sweep: the projector's subscription is then the worker's too (each batch projected first,
 * then handled from the head on), and the sweep finds older owed wakes.
 * Without a projection it catches up from the start of the log. A child's turn that ends here is
 * delivered to the session that called it at once (the sweep is the fallback).
 */
import type { SessionEvent } from '../events/envelope.ts';
import type { Subscription } from '../events/event-log.ts';
import { ErrorCode, SessiondError, isSessiondError, messageOf, CancelledError } from '../errors.ts';
import type { Db } from '../storage/sqlite/database.ts';
import { Projector } from '../projector/projector.ts';
import { RecoverySweeper, type RecoveryNotice } from '../recovery/sweeper.ts';
import { projectionCandidates } from '../recovery/projection-candidates.ts';
import { systemClock, type Clock } from '../clock.ts';
import type { SessionExecution } from './session-execution.ts';
import { BlobSweeper, type BlobSweepSettings } from './blob-sweeper.ts';

export interface WorkerOptions {
  /** Start reading the log after this position (default: 0, or the head when a projection is given). */
  after?: number;
  /** SQLite database for the projection and the recovery sweep's candidates. */
  projection?: Db;
  /** Recovery sweep settings (used with `projection`). */
  sweep?: { intervalMs?: number; maxWakeAttempts?: number; wakeBackoffMs?: number; onNotice?: (n: RecoveryNotice) => void };
  /**
   * The blob sweep (used with `projection` when the execution has a blob store): unreferenced blobs
   * older than `graceMs` are removed every `intervalMs`; `false` turns it off.
   */
  blobSweep?: BlobSweepSettings | false;
  clock?: Clock;
  /** Called for every committed event, after the worker handled it (the CLI prints them). */
  onEvent?: (event: SessionEvent) => void;
  onError?: (err: unknown) => void;
  /**
   * A part of the worker stopped for good (its log subscription, or the projection after waiting out
   * a locked database): the worker can no longer keep its promises and should be restarted. The
   * error names the part, position and cause. Default: `onError`. `sessiond start` exits 1.
   */
  onFatal?: (err: unknown) => void;
}

export interface Worker {
  readonly execution: SessionExecution;
  readonly sweeper: RecoverySweeper | undefined;
  readonly projector: Projector | undefined;
  /** The blob sweep, when the worker has a projection and a blob store. */
  readonly blobSweeper: BlobSweeper | undefined;
  /** Log position the worker has handled. */
  readonly position: number;
  /** Stops the sweep, the subscriptions and the execution service (turns in progress are handed back). */
  stop(): Promise<void>;
  /** While `stop` runs: what it waits for, in words (said when a stop takes too long). */
  readonly stopping: string | undefined;
}

/** Does this event end a turn (a child's, whose caller may be waiting on it)? */
const turnEnded = (e: SessionEvent) =>
  (e.type === 'execution.settled' && e.payload.outcome !== 'waiting') ||
  e.type === 'execution.cancelled' ||
  (e.type === 'wait.resolved' && e.payload.outcome === 'cancelled');

const SWEEP_STEP = 'the recovery sweep';
const TURNS_STEP = 'the turns in progress (handing them back)';

export function startWorker(execution: SessionExecution, options: WorkerOptions = {}): Worker {
  const onError = options.onError ?? ((err) => process.stderr.write(`sessiond: worker error: ${messageOf(err)}\n`));
  const failed = (part: string) => (err: unknown) => {
    if (stopped) return;
    const fatal = new SessiondError(isSessiondError(err) ? err.code : ErrorCode.LogClosed, `the worker's ${part} stopped: ${messageOf(err)}`, {
      cause: err,
      details: { part },
    });
    (options.onFatal ?? onError)(fatal);
  };
  /** Sessions to wake, with their newest admission's sequence. */
  const wakeLater = new Map<string, number>();
  let catchingUp = options.projection === undefined;
  let subscription: Subscription | undefined;
  /** With a projection behind the head at start: the subscription from the head until it catches up. */
  let ahead: Subscription | undefined;
  let projector: Projector | undefined;
  let sweeper: RecoverySweeper | undefined;
  let blobSweeper: BlobSweeper | undefined;
  let stopped = false;
  let stopping: string | undefined;

  const handle = (events: readonly SessionEvent[]) => {
    execution.handler.observe(events);
    /** Sessions whose call into a session whose turn just ended may be answered now (not at the next sweep). */
    const callers = new Set<string>();
    for (const e of events) {
      if (turnEnded(e)) {
        const caller = execution.handler.cached(e.sessionId)?.context.calledBy;
        if (caller !== undefined) callers.add(caller);
      }
      if (e.type === 'input.admitted' && e.payload.wake) wakeLater.set(e.sessionId, e.seq);
      if (e.type === 'execution.cancelled') {
        const run = execution.registry.get(e.sessionId);
        if (run?.executionId === e.payload.executionId && run.controller && !run.controller.signal.aborted) {
          run.controller.abort(new CancelledError(e.payload.executionId, e.payload.reason));
        }
      }
      options.onEvent?.(e);
    }
    for (const caller of callers) void sweeper?.deliverTo(caller);
  };

  const wakeAll = () => {
    for (const [sessionId, seq] of wakeLater) {
      wakeLater.delete(sessionId);
      execution.wake(sessionId, seq).catch(onError); // observed: the cache holds it, no reload
    }
  };

  /** The position up to which committed events were handled (by whichever subscription saw them first). */
  let handled = options.after ?? 0;
  /** The worker's part of each committed batch: observe, abort, wake (once caught up, without a projection). */
  const onBatch = async (events: readonly SessionEvent[]) => {
    const fresh = events.length > 0 && events[0]!.position! > handled ? events : events.filter((e) => e.position! > handled);
    if (fresh.length === 0) return;
    handled = fresh[fresh.length - 1]!.position!;
    handle(fresh);
    if (catchingUp && (await execution.log.head()) > events[events.length - 1]!.position!) return; // wake once caught up
    catchingUp = false;
    wakeAll();
  };

  if (options.projection) {
    const db = options.projection;
    const p = new Projector(db);
    projector = p;
    sweeper = new RecoverySweeper({
      execution,
      candidates: projectionCandidates(db),
      clock: options.clock ?? systemClock,
      ...(options.sweep ?? {}),
    });
    if (execution.blobs && options.blobSweep !== false) {
      const settings = options.blobSweep ?? {};
      blobSweeper = new BlobSweeper(db, execution.log, execution.blobs, options.clock ?? systemClock, {
        onError: (message) => onError(new Error(message)),
        ...settings,
      });
    }
    // One subscription of the log: the projector folds each batch (inline: on the embedded log, the
    // same connection, the rows commit with the appends), then the worker handles the new events,
    // from the head on; what was owed before is the sweep's to find. While the projection is behind
    // the head (a first start on a long log, a long stop), a subscription from the head handles the
    // new events until the projection reaches what it handled, so wakes and cancellations never
    // wait for the catch-up.
    void execution.log.head().then((head) => {
      if (stopped) return;
      handled = options.after ?? head;
      if (p.checkpoint() < handled) {
        ahead = execution.log.subscribe({ after: handled, onBatch, onError: failed('log subscription (wakes and cancellations)') });
      }
      subscription = p.follow(execution.log, {
        inline: true,
        onError: failed('log subscription (projection, wakes and cancellations)'),
        ...(options.clock ? { clock: options.clock } : {}),
        afterBatch: async (events) => {
          if (stopped) return; // stopping: the projection still folds what the hand-back appends
          await onBatch(events);
          if (ahead && events[events.length - 1]!.position! >= handled) {
            void ahead.close(); // caught up: from here the projection's subscription hands over every batch
            ahead = undefined;
          }
        },
      });
      sweeper!.start();
      blobSweeper?.start();
    }, onError);
  } else {
    subscription = execution.log.subscribe({ after: options.after ?? 0, onBatch, onError: failed('log subscription (wakes and cancellations)') });
  }

  return {
    execution,
    get sweeper() {
      return sweeper;
    },
    get projector() {
      return projector;
    },
    get blobSweeper() {
      return blobSweeper;
    },
    get position() {
      return subscription?.position ?? 0;
    },
    get stopping() {
      // what the step waits for, where it can tell (a stop that hangs names its cause)
      if (stopping === SWEEP_STEP && sweeper) return `${stopping} (${sweeper.doing})`;
      if (stopping === TURNS_STEP) {
        const driving = execution.driving();
        return `${stopping}${driving.length > 0 ? `: still driving ${driving.slice(0, 5).join(', ')}${driving.length > 5 ? ', ...' : ''}` : ''}`;
      }
      return stopping;
    },
    async stop() {
      stopped = true;
      const step = async (what: string, close: () => Promise<void> | undefined) => {
        stopping = what;
        await close();
      };
      await step(SWEEP_STEP, () => sweeper?.stop());
      await step('the blob sweep', () => blobSweeper?.stop());
      if (projector) {
        await step('the catch-up subscription', () => ahead?.close());
        // the projection follows the turns handed back, then stops
        await step(TURNS_STEP, () => execution.close());
        await step('the log subscription', () => subscription?.close());
      } else {
        await step('the log subscription', () => subscription?.close());
        await step(TURNS_STEP, () => execution.close());
      }
      stopping = undefined;
    },
  };
}
