import { ManualClock } from '../../src/clock.ts';
import { sequentialIds } from '../../src/ids.ts';
import { openDatabase, type Db } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { SessionExecution, type ExecutionOptions } from '../../src/execution/session-execution.ts';
import { admitInput, type AdmitRequest } from '../../src/input/admit.ts';
import type { Runner, RunContext } from '../../src/runner/types.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { tempDir } from './tmp.ts';

/** A runner that blocks each turn until the test releases it. */
export function gatedRunner(options: { observeAbort?: boolean } = {}) {
  const runs: { ctx: RunContext; release: (err?: Error) => void; aborted: Promise<unknown> }[] = [];
  const waiters: (() => void)[] = [];
  const runner: Runner = (ctx) =>
    new Promise<void>((resolve, reject) => {
      const aborted = new Promise((r) => ctx.signal.addEventListener('abort', () => r(ctx.signal.reason), { once: true }));
      if (options.observeAbort) ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
      runs.push({ ctx, release: (err) => (err ? reject(err) : resolve()), aborted });
      for (const w of waiters.splice(0)) w();
    });
  const started = (count: number) =>
    new Promise<void>((resolve) => {
      const check = () => (runs.length >= count ? resolve() : waiters.push(check));
      check();
    });
  return { runner, runs, started };
}

/** One SQLite file, any number of execution services on it (each its own connection, like processes). */
export function fixture() {
  const tmp = tempDir();
  const file = tmp.file('sessiond.db');
  const dbs: Db[] = [];
  const services: SessionExecution[] = [];
  const logs: SqliteEventLog[] = [];
  const open = () => {
    const db = openDatabase(file);
    migrate(db);
    dbs.push(db);
    const log = new SqliteEventLog(db);
    logs.push(log);
    return log;
  };
  const ids = sequentialIds();
  return {
    file,
    ids,
    service(options: Partial<ExecutionOptions> & { runner: Runner }) {
      const svc = new SessionExecution({
        log: open(),
        clock: new ManualClock(0),
        ids,
        ...(process.env.DBG ? { onNotice: (n) => console.log(options.ownerId, n) } : {}),
        ...options,
      });
      services.push(svc);
      return svc;
    },
    async admit(svc: SessionExecution, sessionId: string, req: AdmitRequest) {
      return admitInput(svc.handler, sessionId, req);
    },
    async events(sessionId: string): Promise<SessionEvent[]> {
      return (logs[0] ?? open()).readSession(sessionId);
    },
    async close() {
      for (const s of services) await s.close().catch(() => {});
      for (const l of logs) await l.close();
      for (const d of dbs) if (d.open) d.close();
      tmp.remove();
    },
  };
}

export const types = (events: SessionEvent[]) => events.map((e) => e.type);
export const count = (events: SessionEvent[], type: string) => events.filter((e) => e.type === type).length;
