/**
 * The embedded engine: one SQLite file, one worker. A thin composition of the log, the execution
 * service and admission; each part stays usable on its own.
 *
 *   const engine = await openEngine({ file: './.sessiond/sessiond.db', runner: echoRunner() });
 *   await engine.admit('ses_1', { prompt: 'hello' });   // admits and wakes
 *   await engine.awaitIdle('ses_1');
 *   await engine.close();
 */
import type { Clock } from './clock.ts';
import type { IdSource } from './ids.ts';
import type { EventLog } from './events/event-log.ts';
import type { LiveBus } from './events/live-bus.ts';
import type { Runner } from './runner/types.ts';
import { openDatabase, type Db, type Synchronous } from './storage/sqlite.ts';
import { migrate } from './storage/migrate.ts';
import { SqliteEventLog } from './storage/sqlite-event-log.ts';
import { SessionExecution, type CancelResult, type Notice, type ResumeResult } from './execution/session-execution.ts';
import { admitInput, type AdmitReceipt, type AdmitRequest } from './input/admit.ts';
import { stateOf, type SessionSnapshot, type SessionStateValue } from './machines/decider.ts';
import type { SessionContext } from './machines/session-context.ts';

export interface EngineOptions {
  /** SQLite file (created and migrated when needed): the embedded log, and the projection. */
  file: string;
  /** Another event log (e.g. a JetStreamEventLog); the SQLite file then only holds the projection. */
  log?: EventLog;
  runner: Runner;
  clock?: Clock;
  ids?: IdSource;
  ownerId?: string;
  leaseMs?: number;
  heartbeatMs?: number;
  synchronous?: Synchronous;
  bus?: LiveBus;
  onNotice?: (notice: Notice) => void;
}

export interface SessionStatus {
  sessionId: string;
  state: SessionStateValue;
  seq: number;
  context: SessionContext;
}

export interface Engine {
  readonly ownerId: string;
  readonly db: Db;
  readonly log: EventLog;
  readonly execution: SessionExecution;
  admit(sessionId: string, request: AdmitRequest): Promise<AdmitReceipt>;
  wake(sessionId: string): Promise<void>;
  resume(sessionId: string): Promise<ResumeResult>;
  cancel(sessionId: string, reason?: string): Promise<CancelResult>;
  awaitIdle(sessionId: string): Promise<void>;
  status(sessionId: string): Promise<SessionStatus>;
  close(): Promise<void>;
}

export function statusOf(snapshot: SessionSnapshot): SessionStatus {
  return { sessionId: snapshot.context.sessionId, state: stateOf(snapshot), seq: snapshot.context.seq, context: snapshot.context };
}

export async function openEngine(options: EngineOptions): Promise<Engine> {
  const db = openDatabase(options.file, { ...(options.synchronous ? { synchronous: options.synchronous } : {}) });
  migrate(db, options.clock ? { clock: options.clock } : {});
  const ownLog = options.log === undefined;
  const log = options.log ?? new SqliteEventLog(db);
  const execution = new SessionExecution({
    log, runner: options.runner,
    ...pick(options, ['clock', 'ids', 'ownerId', 'leaseMs', 'heartbeatMs', 'bus', 'onNotice']),
  });
  return {
    ownerId: execution.ownerId, db, log, execution,
    async admit(sessionId, request) {
      const receipt = await admitInput(execution.handler, sessionId, request);
      if (receipt.wake) await execution.wake(sessionId);
      return receipt;
    },
    wake: (id) => execution.wake(id),
    resume: (id) => execution.resume(id),
    cancel: (id, reason) => execution.cancel(id, reason),
    awaitIdle: (id) => execution.awaitIdle(id),
    status: async (id) => statusOf(await execution.status(id)),
    async close() {
      await execution.close();
      if (ownLog) await log.close();
      db.close();
    },
  };
}

function pick<T extends object, K extends keyof T>(obj: T, keys: K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const k of keys) if (obj[k] !== undefined) out[k] = obj[k];
  return out;
}
