// Helpers for the multi-node NATS tests (multinode.test.ts): real `sessiond start --nats` worker
// processes on one harness nats-server, a reader of the whole JetStream log, and one analysis of the
// log that the tests assert on (who claimed what, how each execution ended, which inputs ran).
import type { SessionEvent } from '../../src/events/envelope.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { WORKER, workerNatsFlags, type NatsServer } from '../../src/testing/nats-server.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { startCli, type LongRunning } from '../support/cli.ts';

export interface WorkerProc extends LongRunning {
  name: string;
  /** Output lines with the time they arrived (ms since the epoch), for failure reports. */
  timed: { t: number; line: string }[];
  ownerId: string;
  db: string;
  /** `claimed` notices printed by this worker. */
  claimedLines(): string[];
  killed: boolean;
}

export interface WorkerFlags {
  leaseMs: number;
  heartbeatMs: number;
  sweepMs: number;
  echoDelayMs?: number;
}

/**
 * Starts `n` workers in parallel, each with its own projection file; resolves once all are serving.
 * `envOf(name)` adds to a worker's environment (e.g. libfaketime's, to skew its clock).
 */
export async function startWorkers(
  server: Pick<NatsServer, 'url'>,
  n: number,
  dbFile: (name: string) => string,
  flags: WorkerFlags,
  into: WorkerProc[],
  envOf: (name: string) => NodeJS.ProcessEnv | undefined = () => undefined,
): Promise<WorkerProc[]> {
  const started: WorkerProc[] = [];
  for (let i = 1; i <= n; i++) {
    const name = `w${i}`;
    const db = dbFile(`${name}.db`);
    const args = [
      'start',
      ...workerNatsFlags(server.url),
      '--db',
      db,
      '--lease-ms',
      String(flags.leaseMs),
      '--heartbeat-ms',
      String(flags.heartbeatMs),
      '--sweep-ms',
      String(flags.sweepMs),
      ...(flags.echoDelayMs !== undefined ? ['--echo-delay-ms', String(flags.echoDelayMs)] : []),
    ];
    const extra = envOf(name);
    const proc = startCli(args, extra ? { env: extra } : {});
    const timed: { t: number; line: string }[] = [];
    let partial = '';
    const record = (d: Buffer) => {
      const parts = (partial + d.toString('utf8')).split('\n');
      partial = parts.pop()!;
      for (const line of parts) timed.push({ t: Date.now(), line });
    };
    proc.child.stdout!.on('data', record);
    proc.child.stderr!.on('data', record);
    const worker: WorkerProc = Object.assign(proc, {
      name,
      db,
      ownerId: '',
      killed: false,
      timed,
      claimedLines: () =>
        proc
          .output()
          .split('\n')
          .filter((l) => /^\S+ {2}claimed \(execution exe_/.test(l)),
    });
    into.push(worker); // registered before waiting, so the caller's finally kills it whatever happens
    started.push(worker);
  }
  await Promise.all(
    started.map(async (w) => {
      await w.waitFor('send it a prompt', 30_000);
      const owner = /sessiond worker (own_\S+) is running/.exec(w.output())?.[1];
      if (!owner) throw new Error(`${w.name}: no owner id in its startup output:\n${w.output()}`);
      w.ownerId = owner;
    }),
  );
  return started;
}

/** SIGKILLs every worker still running and waits for each to exit (for `finally`). */
export async function killAll(workers: WorkerProc[]): Promise<void> {
  await Promise.all(
    workers.map(async (w) => {
      if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
      await w.exited;
    }),
  );
}

/** Stops a worker with SIGTERM (clean hand-back); SIGKILL if it has not exited within `timeoutMs`. */
export async function stopWorker(w: WorkerProc, timeoutMs = 10_000): Promise<number | null | 'timeout'> {
  if (w.child.exitCode !== null || w.child.signalCode !== null) return w.child.exitCode;
  w.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((r) => {
    timer = setTimeout(() => r('timeout'), timeoutMs);
  });
  const result = await Promise.race([w.exited, timeout]);
  clearTimeout(timer);
  if (result === 'timeout') {
    w.child.kill('SIGKILL');
    await w.exited;
  }
  return result;
}

/** A worker-user connection to the stream, for reading the whole log (reconnects through restarts). */
export function openReader(server: NatsServer): Promise<JetStreamEventLog> {
  return JetStreamEventLog.open({ connection: { servers: server.url, ...WORKER, reconnectWaitMs: 50, name: 'multinode-test-reader' } });
}

/** The whole log, or undefined when the read failed (e.g. during a server restart): pollers retry. */
export async function readAllOrNothing(log: JetStreamEventLog): Promise<SessionEvent[] | undefined> {
  try {
    return await log.readAll();
  } catch {
    return undefined;
  }
}

/** Polls the log until `done(events)` holds; fails after `timeoutMs` with `describe(last events)`. */
export async function pollLog(
  log: JetStreamEventLog,
  done: (events: SessionEvent[]) => boolean,
  what: string,
  options: { timeoutMs?: number; intervalMs?: number; describe?: (events: SessionEvent[]) => string } = {},
): Promise<SessionEvent[]> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  let last: SessionEvent[] = [];
  for (;;) {
    const events = await readAllOrNothing(log);
    if (events) {
      last = events;
      if (done(events)) return events;
    }
    if (Date.now() > deadline) {
      throw new Error(`Timed out after ${options.timeoutMs ?? 30_000} ms waiting for ${what}.${options.describe ? `\n${options.describe(last)}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 200));
  }
}

type Ev<T extends SessionEvent['type']> = SessionEvent<T>;

export interface ExecutionInfo {
  id: string;
  sessionId: string;
  ownerId: string;
  promoted: string[];
  settled: Ev<'execution.settled'>[];
  recoveryStarted: Ev<'recovery.started'>[];
  recoveryCompleted: Ev<'recovery.completed'>[];
  stepStarted: number;
}

export interface LogAnalysis {
  events: SessionEvent[];
  sessions: Set<string>;
  /** Event ids that occur more than once. */
  duplicateIds: string[];
  /** input id -> its input.admitted events */
  admitted: Map<string, Ev<'input.admitted'>[]>;
  /** input id -> its input.promoted events */
  promoted: Map<string, Ev<'input.promoted'>[]>;
  executions: Map<string, ExecutionInfo>;
  /** owner id -> executions it claimed */
  claimsByOwner: Map<string, number>;
}

export function analyse(events: SessionEvent[]): LogAnalysis {
  const seen = new Set<string>();
  const duplicateIds: string[] = [];
  const admitted = new Map<string, Ev<'input.admitted'>[]>();
  const promoted = new Map<string, Ev<'input.promoted'>[]>();
  const executions = new Map<string, ExecutionInfo>();
  const claimsByOwner = new Map<string, number>();
  const sessions = new Set<string>();
  const push = <K, V>(m: Map<K, V[]>, k: K, v: V) => {
    const l = m.get(k);
    if (l) l.push(v);
    else m.set(k, [v]);
  };
  const exec = (id: string, sessionId: string): ExecutionInfo => {
    let x = executions.get(id);
    if (!x) executions.set(id, (x = { id, sessionId, ownerId: '?', promoted: [], settled: [], recoveryStarted: [], recoveryCompleted: [], stepStarted: 0 }));
    return x;
  };
  for (const e of events) {
    sessions.add(e.sessionId);
    if (seen.has(e.id)) duplicateIds.push(e.id);
    seen.add(e.id);
    switch (e.type) {
      case 'execution.claimed': {
        const x = exec(e.payload.executionId, e.sessionId);
        x.ownerId = e.payload.ownerId;
        claimsByOwner.set(e.payload.ownerId, (claimsByOwner.get(e.payload.ownerId) ?? 0) + 1);
        break;
      }
      case 'execution.settled':
        exec(e.payload.executionId, e.sessionId).settled.push(e as Ev<'execution.settled'>);
        break;
      case 'recovery.started':
        exec(e.payload.executionId, e.sessionId).recoveryStarted.push(e as Ev<'recovery.started'>);
        break;
      case 'recovery.completed':
        exec(e.payload.executionId, e.sessionId).recoveryCompleted.push(e as Ev<'recovery.completed'>);
        break;
      case 'step.started':
        exec(e.payload.executionId, e.sessionId).stepStarted++;
        break;
      case 'input.admitted':
        push(admitted, e.payload.inputId, e as Ev<'input.admitted'>);
        break;
      case 'input.promoted': {
        push(promoted, e.payload.inputId, e as Ev<'input.promoted'>);
        exec(e.payload.executionId, e.sessionId).promoted.push(e.payload.inputId);
        break;
      }
    }
  }
  return { events, sessions, duplicateIds, admitted, promoted, executions, claimsByOwner };
}

/** An execution has ended: settled, or recovered (its owner lost it). */
export const ended = (x: ExecutionInfo) => x.settled.length > 0 || x.recoveryCompleted.length > 0;

/**
 * Everything admitted (including `expected` user inputs, which must all be there) was promoted and
 * every claimed execution has ended: the cluster has no work left.
 */
export function allDone(a: LogAnalysis, expected: Iterable<string>): boolean {
  for (const id of expected) if (!a.admitted.has(id)) return false;
  for (const id of a.admitted.keys()) if (!a.promoted.has(id)) return false;
  for (const x of a.executions.values()) if (!ended(x)) return false;
  return true;
}

/** A few lines on what is still open, for timeout messages. */
export function describeOpen(events: SessionEvent[]): string {
  const a = analyse(events);
  const unpromoted = [...a.admitted.keys()].filter((id) => !a.promoted.has(id));
  const open = [...a.executions.values()].filter((x) => !ended(x)).map((x) => `${x.sessionId}/${x.id} (${x.ownerId})`);
  return (
    `log: ${events.length} events over ${a.sessions.size} sessions; ${unpromoted.length} input(s) not promoted: ${unpromoted.slice(0, 8).join(', ')}; ` +
    `${open.length} execution(s) not ended: ${open.slice(0, 8).join(', ')}`
  );
}

/** The projector checkpoint (log position folded) in a worker's SQLite projection file. */
export function projectionCheckpoint(file: string): number {
  const db = openDatabase(file, { readonly: true });
  try {
    return (db.prepare("SELECT position FROM projector_checkpoint WHERE name = 'main'").pluck().get() as number | undefined) ?? 0;
  } finally {
    db.close();
  }
}

/** The events of some sessions as lines (ms since `t0`, seq, type, execution, owner), for failure messages. */
export function timeline(events: SessionEvent[], sessionIds: Iterable<string>, t0: number): string {
  const wanted = new Set(sessionIds);
  return events
    .filter((e) => wanted.has(e.sessionId))
    .map((e) => {
      const p = e.payload as { executionId?: string; ownerId?: string; inputId?: string; expiresAt?: number };
      return `  +${e.time - t0}ms ${e.sessionId}#${e.seq} ${e.type}${p.executionId ? ` ${p.executionId.slice(0, 12)}` : ''}${p.ownerId ? ` by ${p.ownerId.slice(0, 12)}` : ''}${p.expiresAt ? ` until +${p.expiresAt - t0}` : ''}${p.inputId ? ` ${p.inputId}` : ''}`;
    })
    .join('\n');
}
