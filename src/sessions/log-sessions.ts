/**
 * `Sessions` on an event log nobody runs turns on here: admissions, cancellations, drops and
 * status are decided by the machine and appended to the log; a worker watching the log (`sessiond
 * start` on the same SQLite file) runs the turns. What the CLI opens on `--db`, and what a tool that
 * writes into a worker's log uses. `wake` answers `requested` when the pending inputs asked for a
 * wake (the worker acts on those), and `refused` when they did not (nothing here runs a turn).
 */
import { systemClock, type Clock } from '../clock.ts';
import { randomIds, type IdSource } from '../ids.ts';
import type { EventLog } from '../events/event-log.ts';
import { CommandHandler } from '../execution/command-handler.ts';
import { Refusal } from '../machines/commands.ts';
import { admitInput } from '../input/admit.ts';
import { urlGuard, type UrlOptions } from '../input/url-guard.ts';
import { dropPending } from '../input/drop.ts';
import { resolveWait, waitMethods } from '../input/resolve.ts';
import { followLog } from './follow-log.ts';
import { checkStatusOptions, knownSessions, statusOf, unlessUnknown } from './status.ts';
import { readEvents } from './events-page.ts';
import { cancelExecution } from '../execution/cancel.ts';
import type { Sessions } from './sessions.ts';
import { NotFoundError } from '../errors.ts';
import type { Db } from '../storage/sqlite/database.ts';
import { sessionBudget } from './budget.ts';
import { tagSession } from './tag.ts';
import { forkSession } from './fork.ts';
import { listFromProjection } from './list-projection.ts';
import { withTenantBudget } from './tenant-budget.ts';
import type { TenantBudgetStore } from '../budget/tenant-store.ts';
import type { BlobStore } from '../blobs/blob-store.ts';
import { DEFAULT_BLOB_GRACE_MS } from '../blobs/sweep.ts';

export interface LogSessionsOptions {
  clock?: Clock;
  ids?: IdSource;
  /** Closes the log (and what holds it) with the Sessions; default: the log is left open. */
  onClose?: () => Promise<void>;
  /** Tenants' budgets, shown in `status` (`SessionStatus.tenantBudget`). */
  tenantBudgets?: TenantBudgetStore;
  /** The SQLite projection `list` reads (brought up to the log's head first); without it `list` is refused. */
  projection?: Db;
  /** Which URLs a prompt may name (src/input/url-guard.ts): default https to public hosts only. */
  urls?: UrlOptions;
  /** Where large prompt parts are stored at admission (the SQLite file's blob table beside its log); none: they are refused by the prompt's size limit. */
  blobs?: BlobStore;
}

export function logSessions(log: EventLog, options: LogSessionsOptions = {}): Sessions {
  const clock = options.clock ?? systemClock;
  const handler = new CommandHandler(log, clock, options.ids ?? randomIds);
  const known = knownSessions((id) => handler.load(id));
  const urls = urlGuard(options.urls);
  return {
    admit: (sessionId, request) => admitInput(handler, sessionId, request, undefined, urls, { store: options.blobs }),
    async wake(sessionId) {
      const { context } = await known(sessionId, 'wake');
      if (context.pending.length === 0) return { status: 'nothing_pending' };
      // a worker on the log wakes a session whose inputs asked for it (as they commit, and again in
      // its recovery sweep); inputs admitted with `wake: false` wait for a process that runs turns
      if (context.pending.some((p) => p.wake)) return { status: 'requested' };
      return {
        status: 'refused',
        reason: Refusal.NoWakePending,
        message: `Session ${sessionId}'s ${context.pending.length} pending input(s) were admitted without a wake, and nothing runs turns here: wake it where turns run (engine.wake, SessiondClient.wake, or sessiond start picks up the next prompt admitted with a wake).`,
      };
    },
    cancel: (sessionId, reason, executionId, options) =>
      unlessUnknown(handler, sessionId, 'cancel', cancelExecution(handler, sessionId, reason, executionId, options)),
    dropPending: (sessionId, request) => unlessUnknown(handler, sessionId, 'drop pending inputs of', dropPending(handler, sessionId, request)),
    // the resumed turn's input asks for a wake: the worker on the log runs it
    ...waitMethods((sessionId, request) => unlessUnknown(handler, sessionId, 'resolve a wait of', resolveWait(handler, sessionId, request))),
    async status(sessionId, statusOptions) {
      const checked = checkStatusOptions(statusOptions);
      return withTenantBudget(statusOf(await known(sessionId, 'show'), clock.now(), checked), options.tenantBudgets);
    },
    follow: (sessionId, onEvent, followOptions) => followLog(log, sessionId, onEvent, followOptions),
    events: (sessionId, eventsOptions) => readEvents(log, sessionId, eventsOptions, async (id) => (await handler.load(id)).context.seq > 0),
    tag: (sessionId, tags) => tagSession(handler, sessionId, tags),
    budget: (sessionId, request) => sessionBudget(handler, sessionId, request),
    fork: (sourceId, sessionId, forkOptions) =>
      forkSession(handler, sourceId, sessionId, forkOptions, options.blobs ? { store: options.blobs, graceMs: DEFAULT_BLOB_GRACE_MS } : undefined),
    async list(filter) {
      if (!options.projection) {
        throw new NotFoundError(
          'These sessions have no projection to list from: open logSessions with { projection: db } (a SQLite database migrated with migrate(db)), or list through a worker (SessiondClient.list).',
        );
      }
      return listFromProjection(options.projection, log, filter);
    },
    async close() {
      await options.onClose?.();
    },
  };
}
