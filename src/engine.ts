/**
 * The embedded engine: one SQLite file, one worker; a thin composition of the log, the execution
 * service and admission, each usable on its own.
 *
 *   const engine = await openEngine({ file: './.sessiond/sessiond.db', runner: echoRunner() });
 */
import { checkKeys } from './options.ts';
import { EXECUTION_OPTIONS } from './execution/session-execution.ts';
import type { EventLog } from './events/event-log.ts';
import { openDatabase, type Db, type Synchronous } from './storage/sqlite/database.ts';
import { migrate, type MigrateOptions } from './storage/sqlite/migrate.ts';
import { startCheckpointer } from './storage/sqlite/checkpointer.ts';
import { SqliteEventLog } from './storage/sqlite/sqlite-event-log.ts';
import { SqliteSnapshotStore } from './storage/sqlite/sqlite-snapshot-store.ts';
import { SqliteBlobStore } from './storage/sqlite/sqlite-blob-store.ts';
import { blobAccess, blobGrantsOf, type BlobGrants } from './blobs/blob-grants.ts';
import type { BlobStore } from './blobs/blob-store.ts';
import { blobReferences } from './projector/blob-rows.ts';
import { catchUpProjection } from './projector/catch-up.ts';
import { checkGraceMs } from './blobs/sweep.ts';
import { systemClock } from './clock.ts';
import { SessionExecution, type ExecutionOptions, type ResumeResult } from './execution/session-execution.ts';
import { admitInput } from './input/admit.ts';
import { dropPending } from './input/drop.ts';
import { resolveWait, waitMethods } from './input/resolve.ts';
import { waitingFor } from './capacity/waiting.ts';
import { checkStatusOptions, knownSessions, statusOf, unlessUnknown } from './sessions/status.ts';
import { readEvents } from './sessions/events-page.ts';
import { followLog } from './sessions/follow-log.ts';
import type { Sessions } from './sessions/sessions.ts';
import { sessionBudget } from './sessions/budget.ts';
import { tenantBudget, tenantBudgets, withTenantBudget, type TenantBudgetRequest, type TenantBudgetResult } from './sessions/tenant-budget.ts';
import { sqliteTenantBudgetStore } from './budget/sqlite-tenant-budget-store.ts';
import { tagSession } from './sessions/tag.ts';
import { forkSession } from './sessions/fork.ts';
import { ErrorCode, SessiondError, isSessiondError } from './errors.ts';
import { validateId } from './ids.ts';
import { deleteSession, type DeleteOptions } from './sessions/delete.ts';
import { sqliteEraser } from './sessions/sqlite-eraser.ts';
import { deletionRecords, type DeletionRecord } from './storage/sqlite/delete-session.ts';
import { listFromProjection } from './sessions/list-projection.ts';
import { LocalLiveBus, fanOut, matchesLive, type LiveEvent, type LiveFilter } from './events/live-bus.ts';
import { publishCommits } from './events/publishing-log.ts';

/** The execution service's options, except that the log may be left to the engine. */
export interface EngineOptions extends Omit<ExecutionOptions, 'log' | 'blobAccess'> {
  /** SQLite file (created and migrated when needed): the embedded log, and the projection. */
  file: string;
  /** How far a long migration of the file got, as it goes (`migrate`'s `onProgress`): for a progress line on a large file. */
  onMigrationProgress?: MigrateOptions['onProgress'];
  /** Another event log (e.g. a JetStreamEventLog); the SQLite file then only holds the projection. */
  log?: EventLog;
  /** Wraps the log the engine writes through (the embedded one or `log`), e.g. with `observeAppends` for metrics. */
  decorateLog?: (log: EventLog) => EventLog;
  synchronous?: Synchronous;
  /**
   * How long an unreferenced blob is kept after its content was last put (ms; default one hour,
   * `DEFAULT_BLOB_GRACE_MS`): a delete removes the session's other blobs at once and leaves these to
   * the worker's blob sweep, which removes them once they are older.
   */
  blobGraceMs?: number;
}

/**
 * The embedded engine: `Sessions` whose turns run in this process (admit wakes and runs the turn
 * here), plus what only an engine has.
 */
export interface Engine extends Sessions {
  readonly ownerId: string;
  readonly db: Db;
  readonly log: EventLog;
  readonly execution: SessionExecution;
  /**
   * Where large prompt parts are kept, beside the log: the SQLite file's `blob` table when the log is
   * there; on NATS what `sessiond start` passes (the Object Store bucket), else none. A client may `put` bytes here and admit a part that references them.
   */
  readonly blobs: BlobStore | undefined;
  /** Where uploads record that their owner may reference a blob in admissions (blob-grants.ts); with `blobs`. */
  readonly blobGrants: BlobGrants | undefined;
  /** `wake` as the execution service says it (the same result). */
  resume(sessionId: string): Promise<ResumeResult>;
  /** Resolves once no turn of the session runs here. */
  awaitIdle(sessionId: string): Promise<void>;
  /** Sessions with a turn running in this engine now. */
  activeTurns(): number;
  /**
   * Deletes the session from this engine's SQLite file (its events, rows, snapshot and inputs), a
   * turn in progress cancelled first, and records who deleted it and when (`deletions()`).
   * Refused on an engine whose log is elsewhere (NATS).
   */
  delete(sessionId: string, options?: DeleteOptions): Promise<DeletionRecord>;
  /** The deletions recorded in this file, newest first. */
  deletions(limit?: number): DeletionRecord[];
  /**
   * A tenant's budget (what all of its sessions may spend together) and its spend; with `tokens`,
   * `costUsd` or `reset`, changes it first. Kept in this engine's SQLite file when the log is
   * there, else in the `tenantBudgets` store it was given (none: refused, saying so).
   */
  tenantBudget(tenant: string, request?: TenantBudgetRequest): Promise<TenantBudgetResult>;
  /** Every tenant with a budget, by name. */
  tenantBudgets(): Promise<TenantBudgetResult[]>;
  /**
   * Live events of this process matching `filter`, from now on: the text and reasoning deltas and
   * model retries of the turns it runs, and every event it commits, each once, as it commits (with
   * its `seq`). Called synchronously as they happen (queue the work; a handler that throws goes to
   * `onError`). Events other processes commit are not here: `follow` reads those from the log, and on
   * NATS `SessiondClient.subscribe` hears every worker.
   */
  subscribe(filter: LiveFilter, handler: (event: LiveEvent) => void, options?: { onError?: (err: unknown) => void }): { close(): void };
}

export async function openEngine(options: EngineOptions): Promise<Engine> {
  checkKeys('openEngine', options, [...EXECUTION_OPTIONS.filter((k) => k !== 'blobAccess'), 'file', 'decorateLog', 'synchronous', 'onMigrationProgress']);
  const blobGraceMs = checkGraceMs(options.blobGraceMs, 'engine option blobGraceMs');
  const db = openDatabase(options.file, { ...(options.synchronous ? { synchronous: options.synchronous } : {}) });
  migrate(db, { ...(options.clock ? { clock: options.clock } : {}), ...(options.onMigrationProgress ? { onProgress: options.onMigrationProgress } : {}) });
  const ownLog = options.log === undefined;
  // what this process publishes live (deltas, its commits) goes to its subscribers, and to `bus` (NATS)
  const live = new LocalLiveBus();
  const inner = publishCommits(options.log ?? new SqliteEventLog(db), live);
  const log = options.decorateLog ? options.decorateLog(inner) : inner;
  const { file: _file, log: _log, synchronous: _sync, decorateLog: _decorate, bus: _bus, onMigrationProgress: _progress, ...rest } = options;
  const executionOptions = { ...rest, bus: options.bus ? fanOut(options.bus, live) : live };
  // snapshots beside the log: by default in the SQLite file (on NATS `sessiond start` passes the
  // shared JetStream store; this file is the fallback)
  const snapshots = options.snapshots ?? new SqliteSnapshotStore(db, options.clock ?? systemClock);
  // tenants' budgets: in the SQLite file beside its log (on NATS `sessiond start` passes the KV store)
  const budgets = options.tenantBudgets ?? (ownLog ? sqliteTenantBudgetStore(db, options.clock ?? systemClock) : undefined);
  // large prompt parts: in the SQLite file beside its log (on NATS `sessiond start` passes the Object Store bucket; without one such parts are refused)
  const blobs = options.blobs ?? (ownLog ? new SqliteBlobStore(db, options.clock ?? systemClock) : undefined);
  const blobGrants = blobs ? blobGrantsOf(blobs, options.clock ?? systemClock) : undefined;
  // an owner names a stored blob it uploaded, or one a session it reaches references (the projection at the log's head)
  const references = blobGrants ? blobReferences(db) : undefined;
  const mayReference =
    blobGrants && references
      ? blobAccess(blobGrants, async (owner, sha256) => {
          await catchUpProjection(db, log);
          return references.reachedBy(sha256, owner);
        })
      : undefined;
  const execution = new SessionExecution({
    ...executionOptions,
    log,
    snapshots,
    ...(budgets ? { tenantBudgets: budgets } : {}),
    ...(blobs ? { blobs } : {}),
    ...(mayReference ? { blobAccess: mayReference } : {}),
    blobGraceMs,
  });
  const clock = options.clock ?? systemClock;
  const known = knownSessions((id) => execution.status(id));
  const budgetStore = () => {
    if (budgets) return budgets;
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `This engine keeps no tenants' budgets: its log is ${log.name}, not its SQLite file. Give openEngine a tenantBudgets store (on NATS: jetstreamTenantBudgetStore), or use sessiond budget --tenant T --nats URL --nats-user admin.`,
    );
  };
  // last in start-up, once nothing above can throw: WAL checkpoints off the event loop (storage/sqlite/checkpointer.ts)
  const checkpointer = startCheckpointer(db);
  return {
    ownerId: execution.ownerId,
    db,
    log,
    execution,
    blobs: execution.blobs,
    blobGrants,
    async admit(sessionId, request) {
      let receipt: Awaited<ReturnType<typeof admitInput>>;
      try {
        receipt = await admitInput(execution.handler, sessionId, request, execution.limits, execution.urls, execution.admissionBlobs);
      } catch (err) {
        // a full queue drains by itself: the refusal wakes the session, so what waits (even admitted
        // with wake: false) runs in bounded turns and a retried prompt gets in without an operator
        if (isSessiondError(err, ErrorCode.LimitExceeded) && 'maxPendingInputs' in err.details) await execution.wake(sessionId).catch(() => {});
        throw err;
      }
      if (receipt.wake) await execution.wake(sessionId, receipt.admittedSeq); // the cache holds it: no reload
      return receipt;
    },
    wake: (id) => unlessUnknown(execution.handler, id, 'wake', execution.resume(id)),
    resume: (id) => execution.resume(id),
    cancel: (id, reason, executionId, options) => unlessUnknown(execution.handler, id, 'cancel', execution.cancel(id, reason, executionId, options)),
    dropPending: (id, request) => unlessUnknown(execution.handler, id, 'drop pending inputs of', dropPending(execution.handler, id, request)),
    ...waitMethods(async (id, request) => {
      const result = await unlessUnknown(execution.handler, id, 'resolve a wait of', resolveWait(execution.handler, id, request));
      if (result.resumeInputId) await execution.wake(id); // the turn resumes here
      return result;
    }),
    awaitIdle: (id) => execution.awaitIdle(id),
    async status(id, statusOptions) {
      const checked = checkStatusOptions(statusOptions);
      const status = await withTenantBudget(statusOf(await known(id, 'show'), clock.now(), checked), budgets);
      // a model call of its running turn waiting for room under the deployment's limits
      const gate = execution.modelCalls;
      if (!gate || status.execution === null || status.execution.outcome !== null) return status;
      const capacity = waitingFor(await gate.view(), id);
      return capacity ? { ...status, capacity } : status;
    },
    follow: (id, handler, followOptions) => followLog(log, id, handler, followOptions),
    events: (id, eventsOptions) => readEvents(log, id, eventsOptions, async (sid) => (await execution.status(sid)).context.seq > 0),
    tag: (id, tags) => tagSession(execution.handler, id, tags),
    budget: (id, request) => sessionBudget(execution.handler, id, request),
    fork: (sourceId, id, forkOptions) =>
      forkSession(execution.handler, sourceId, id, forkOptions, execution.blobs ? { store: execution.blobs, graceMs: blobGraceMs } : undefined),
    list: (filter) => listFromProjection(db, log, filter),
    async delete(id, deleteOptions) {
      if (!ownLog) {
        throw new SessiondError(
          ErrorCode.InvalidOption,
          `Cannot delete session ${id} here: this engine's log is ${log.name}, not its SQLite file; a worker's engine may not delete from a NATS stream: the admin user does, with sessiond delete SESSION --yes --nats URL --nats-user admin (docs/operating.md, "Deleting sessions").`,
        );
      }
      const reclaim = blobs ? { store: blobs, log, graceMs: blobGraceMs } : undefined;
      return deleteSession(execution.handler, sqliteEraser(db, clock, reclaim), id, deleteOptions, () => execution.awaitIdle(id));
    },
    deletions: (limit) => deletionRecords(db, limit),
    tenantBudget: async (tenant, request) => tenantBudget(budgetStore(), clock, tenant, request),
    tenantBudgets: async () => tenantBudgets(budgetStore()),
    subscribe(filter, handler, subscribeOptions) {
      if (filter.sessionId !== undefined) validateId(filter.sessionId, 'session id');
      const off = live.subscribe((event) => {
        if (matchesLive(filter, event)) handler(event);
      }, subscribeOptions?.onError);
      return { close: off };
    },
    activeTurns: () => execution.registry.activeTurns(),
    async close() {
      await execution.close();
      if (ownLog) await log.close();
      await checkpointer?.close();
      db.close();
    },
  };
}
