/**
 * The embedded engine: one SQLite file, one worker. A thin composition of the log, the execution
 * service and admission; each part stays usable on its own.
 *
 *   const engine = await openEngine({ file: './.sessiond/sessiond.db', runner: echoRunner() });
 *   await engine.admit('ses_1', { prompt: 'hello' });   // admits and wakes
 *   await engine.awaitIdle('ses_1');
 *   await engine.close();
 */
import { checkKeys } from './options.ts';
import { EXECUTION_OPTIONS } from './execution/session-execution.ts';
import { sessionView, type SessionView } from './machines/session-view.ts';
import type { EventLog } from './events/event-log.ts';
import { openDatabase, type Db, type Synchronous } from './storage/sqlite.ts';
import { migrate } from './storage/migrate.ts';
import { SqliteEventLog } from './storage/sqlite-event-log.ts';
import { SqliteSnapshotStore } from './storage/sqlite-snapshot-store.ts';
import { systemClock } from './clock.ts';
import { SessionExecution, type CancelResult, type ExecutionOptions, type ResumeResult } from './execution/session-execution.ts';
import { admitInput, type AdmitReceipt, type AdmitRequest } from './input/admit.ts';
import { dropPending, type DropPendingRequest, type DropPendingResult } from './input/drop.ts';
import { stateOf, type SessionSnapshot, type SessionStateValue } from './machines/decider.ts';
import type { SessionContext } from './machines/session-context.ts';

/** The execution service's options, except that the log may be left to the engine. */
export interface EngineOptions extends Omit<ExecutionOptions, 'log'> {
  /** SQLite file (created and migrated when needed): the embedded log, and the projection. */
  file: string;
  /** Another event log (e.g. a JetStreamEventLog); the SQLite file then only holds the projection. */
  log?: EventLog;
  /** Wraps the log the engine writes through (the embedded one or `log`), e.g. with `observeAppends` for metrics. */
  decorateLog?: (log: EventLog) => EventLog;
  synchronous?: Synchronous;
}

export interface SessionStatus {
  sessionId: string;
  state: SessionStateValue;
  seq: number;
  context: SessionContext;
  /** The session as people and services see it (owner, lease, phase, pending, usage), derived from the context at the status's time. */
  view: SessionView;
}

export interface Engine {
  readonly ownerId: string;
  readonly db: Db;
  readonly log: EventLog;
  readonly execution: SessionExecution;
  admit(sessionId: string, request: AdmitRequest): Promise<AdmitReceipt>;
  wake(sessionId: string): Promise<void>;
  resume(sessionId: string): Promise<ResumeResult>;
  /** `executionId`: cancel that execution only (see SessionExecution.cancel). */
  cancel(sessionId: string, reason?: string, executionId?: string): Promise<CancelResult>;
  /** Drops the session's pending inputs unrun (all, or those named): an operator unblocking a session. */
  dropPending(sessionId: string, request?: DropPendingRequest): Promise<DropPendingResult>;
  awaitIdle(sessionId: string): Promise<void>;
  status(sessionId: string): Promise<SessionStatus>;
  /** Sessions with a turn running in this engine now. */
  activeTurns(): number;
  close(): Promise<void>;
}

export function statusOf(snapshot: SessionSnapshot, now: number = systemClock.now()): SessionStatus {
  return { sessionId: snapshot.context.sessionId, state: stateOf(snapshot), seq: snapshot.context.seq, context: snapshot.context, view: sessionView(snapshot, now) };
}

export async function openEngine(options: EngineOptions): Promise<Engine> {
  checkKeys('openEngine', options, [...EXECUTION_OPTIONS, 'file', 'decorateLog', 'synchronous']);
  const db = openDatabase(options.file, { ...(options.synchronous ? { synchronous: options.synchronous } : {}) });
  migrate(db, options.clock ? { clock: options.clock } : {});
  const ownLog = options.log === undefined;
  const inner = options.log ?? new SqliteEventLog(db);
  const log = options.decorateLog ? options.decorateLog(inner) : inner;
  const { file: _file, log: _log, synchronous: _sync, decorateLog: _decorate, ...executionOptions } = options;
  // snapshots beside the log: by default in the SQLite file (on NATS `sessiond start` passes the
  // shared JetStream store; this file is the fallback)
  const snapshots = options.snapshots ?? new SqliteSnapshotStore(db, options.clock ?? systemClock);
  const execution = new SessionExecution({ ...executionOptions, log, snapshots });
  return {
    ownerId: execution.ownerId, db, log, execution,
    async admit(sessionId, request) {
      const receipt = await admitInput(execution.handler, sessionId, request, execution.limits);
      if (receipt.wake) await execution.wake(sessionId);
      return receipt;
    },
    wake: (id) => execution.wake(id),
    resume: (id) => execution.resume(id),
    cancel: (id, reason, executionId) => execution.cancel(id, reason, executionId),
    dropPending: (id, request) => dropPending(execution.handler, id, request),
    awaitIdle: (id) => execution.awaitIdle(id),
    status: async (id) => statusOf(await execution.status(id), (options.clock ?? systemClock).now()),
    activeTurns: () => Object.values(execution.registry.getSnapshot().context.runs).filter((r) => r.executionId).length,
    async close() {
      await execution.close();
      if (ownLog) await log.close();
      db.close();
    },
  };
}
