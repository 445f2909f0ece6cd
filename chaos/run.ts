/**
 * `npm run chaos`: a randomized, seeded fault suite with real processes.
 *
 *   npm run chaos -- [--seed N] [--seconds S] [--backend sqlite|nats|both] [--workers N] [--sessions N] [--cluster 3]
 *
 * Real `sessiond start` workers (3 by default) share one SQLite file, or one nats-server (each behind
 * a TCP proxy the suite can cut), running chaos/waiting-runner.ts: echo's work, plus turns that
 * sleep durably (a timer the sweep ends) and turns that ask a person about a call (the driver, as
 * that person, approves 70 % and denies the rest, during the faults and at quiescence). A driver
 * admits prompts to 20 sessions and cancels some, while
 * faults are injected at random: SIGKILL (and a restart), SIGSTOP past the lease (then SIGCONT),
 * SIGTERM (and a restart), cancels; on NATS also nats-server restarts and partitions of one worker;
 * one worker runs with its clock skewed (Debian's faketime) when faketime is installed. With
 * `--cluster 3` the NATS backend is a 3-server cluster with a 3-replica stream (chaos/cluster.ts),
 * and its nemeses are the cluster's: the stream leader SIGKILLed and restarted, a follower likewise,
 * a server isolated and healed, the leader SIGSTOPped past the election timeout and SIGCONTed,
 * beside one worker cut off. Then a
 * quiescence phase: faults stop, every worker runs again, and the suite waits (with a deadline) for
 * the work to drain. Last, the independent checker (chaos/checker.ts, no code shared with the
 * engine's fold) reads the raw log and checks safety and liveness. Prints the seed, the faults, the
 * work done and the findings per check; exits 1 on any finding. The same seed gives the same
 * sequence of random choices (which process a fault hits still depends on process timing).
 */
import { parseArgs } from 'node:util';
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { type Backend, type Worker, readStream } from './backend.ts';
import { CHECKS, check, fromSqliteRows, type Finding } from './checker.ts';
import { CLUSTER_REPLICAS, clusterBackend, clusterServerProblem } from './cluster.ts';
import { startProxy, type TcpProxy } from '../src/testing/tcp-proxy.ts';
import { HOSTILE_MAX_PENDING, HOSTILE_MAX_PROMPT_BYTES, hostileAction } from './hostile.ts';
import { openDatabase } from '../src/storage/sqlite/database.ts';
import { migrate } from '../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../src/storage/sqlite/sqlite-event-log.ts';
import { SessionExecution } from '../src/execution/session-execution.ts';
import { admitInput } from '../src/input/admit.ts';
import { resolveWait } from '../src/input/resolve.ts';
import { clientDecisions, openApprovalsOf } from './decisions.ts';
import { SessiondClient } from '../src/client/client.ts';
import { connectNats } from '../src/nats/connection.ts';
import { startNatsServer, ADMIN, CLIENT, workerNatsFlags, type NatsServer } from '../src/testing/nats-server.ts';
import { storedEvents } from '../src/storage/sqlite/event-rows.ts';

const BIN = fileURLToPath(new URL('../bin/sessiond.js', import.meta.url));
/** The workers' runner: echo's work, plus turns that sleep (`nap`) and ask a person (`ask`). */
const WAITING_RUNNER = fileURLToPath(new URL('./waiting-runner.ts', import.meta.url));
const LEASE_MS = 2_000;
const HEARTBEAT_MS = 500;
const SWEEP_MS = 500;
const ECHO_DELAY_MS = 120;
const SKEW = '+1.5s';
/** The workers' limits in the suite: low, so the hostile client reaches them. */
const HOSTILE_LIMITS = { maxPendingInputs: HOSTILE_MAX_PENDING, maxPromptBytes: HOSTILE_MAX_PROMPT_BYTES };

const { values: args } = parseArgs({
  options: {
    seed: { type: 'string' },
    seconds: { type: 'string', default: '60' },
    backend: { type: 'string', default: 'both' },
    workers: { type: 'string', default: '3' },
    sessions: { type: 'string', default: '20' },
    cluster: { type: 'string' },
  },
});
const seed = Number(args.seed ?? Math.floor(Math.random() * 2 ** 31));
const seconds = Number(args.seconds);
const nWorkers = Number(args.workers);
const nSessions = Number(args.sessions);
const backends = args.backend === 'both' ? (['sqlite', 'nats'] as const) : [args.backend as 'sqlite' | 'nats'];
for (const [name, v] of [
  ['--seed', seed],
  ['--seconds', seconds],
  ['--workers', nWorkers],
  ['--sessions', nSessions],
] as const) {
  if (!Number.isInteger(v) || v < (name === '--seed' ? 0 : 1)) {
    process.stderr.write(`chaos: ${name} must be a whole number (got ${String(v)})\n`);
    process.exit(2);
  }
}
if (!backends.every((b) => b === 'sqlite' || b === 'nats')) {
  process.stderr.write('chaos: --backend must be sqlite, nats or both\n');
  process.exit(2);
}
const clusterSize = args.cluster === undefined ? undefined : Number(args.cluster);
if (clusterSize !== undefined && clusterSize !== CLUSTER_REPLICAS) {
  process.stderr.write(`chaos: --cluster must be ${CLUSTER_REPLICAS} (servers, for the ${CLUSTER_REPLICAS}-replica stream; got ${args.cluster})\n`);
  process.exit(2);
}
if (clusterSize !== undefined && !backends.includes('nats')) {
  process.stderr.write('chaos: --cluster runs the NATS backend on a cluster: use it with --backend nats or both\n');
  process.exit(2);
}
const serverProblem = clusterSize !== undefined ? clusterServerProblem() : undefined;
if (serverProblem) {
  process.stderr.write(`chaos: --cluster: ${serverProblem}\n`);
  process.exit(2);
}

/** mulberry32: a small seeded PRNG, so a seed replays the same fault schedule. */
function prng(s: number): () => number {
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Debian's libfaketime, preloaded into the skewed worker. */
const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
const hasFaketime = existsSync(LIBFAKETIME);

async function sqliteBackend(dir: string): Promise<Backend> {
  const file = join(dir, 'chaos.db');
  const db = openDatabase(file);
  migrate(db);
  const log = new SqliteEventLog(db);
  // the driver admits with the workers' limits (the hostile client pushes at them)
  const execution = new SessionExecution({ log, runner: async () => {}, leaseMs: LEASE_MS, heartbeatMs: HEARTBEAT_MS, limits: HOSTILE_LIMITS });
  const reader = new Database(file, { readonly: true });
  const stored = storedEvents(reader);
  return {
    name: 'sqlite',
    workerArgs: () => ['--db', file],
    admit: async (session, id, prompt, delivery) => {
      await admitInput(execution.handler, session, { id, prompt, delivery, wake: true }, execution.limits);
    },
    cancel: async (session) => {
      await execution.cancel(session, 'chaos');
    },
    openApprovals: async (session) => openApprovalsOf((await execution.handler.load(session)).context.waits),
    decide: async (session, callId, approve) => {
      await resolveWait(execution.handler, session, { kind: 'approval', name: callId, outcome: approve ? 'approved' : 'denied', reason: 'chaos' });
    },
    readLog: async () => ({ events: fromSqliteRows(stored.after(0, -1)), unreadable: 0 }),
    close: async () => {
      await execution.close();
      reader.close();
      await log.close();
      db.close();
    },
  };
}

async function natsBackend(dir: string, nWorkers: number): Promise<Backend & { server: NatsServer }> {
  const server = await startNatsServer();
  const proxies: TcpProxy[] = [];
  for (let i = 0; i < nWorkers; i++) proxies.push(await startProxy(server.port));
  const client = await SessiondClient.connect({ connection: { servers: server.url, ...CLIENT, reconnectWaitMs: 100 }, requestTimeoutMs: 3_000 });
  const admin = await connectNats({ servers: server.url, ...ADMIN, reconnectWaitMs: 100 });
  const raw = await connectNats({ servers: server.url, ...CLIENT, reconnectWaitMs: 100 });
  return {
    name: 'nats',
    server,
    rawRequest: (subject, body) => raw.request(subject, body, { timeout: 3_000 }).then((m) => m.data),
    workerArgs: (i) => [...workerNatsFlags(`nats://127.0.0.1:${proxies[i]!.port}`), '--db', join(dir, `w${i + 1}.db`)],
    admit: async (session, id, prompt, delivery) => {
      await client.admit(session, { id, prompt, delivery });
    },
    cancel: async (session) => {
      await client.cancel(session, 'chaos');
    },
    ...clientDecisions(client),
    readLog: () => readStream(admin),
    fault: async (random, workers) => {
      const r = random();
      if (r < 0.35) {
        await server.restart();
        return { kind: 'nats-server restart', detail: 'nats-server restart' };
      }
      const running = workers.filter((w) => w.state === 'running');
      const i = workers.indexOf(running[Math.floor(random() * running.length)]!);
      if (i < 0 || proxies[i]!.cut) return undefined;
      proxies[i]!.partition();
      const forMs = 1_000 + Math.floor(random() * 3_000);
      setTimeout(() => proxies[i]!.heal(), forMs);
      return { kind: 'partition', detail: `partition of ${workers[i]!.name} for ${(forMs / 1000).toFixed(1)} s` };
    },
    heal: async () => {
      for (const p of proxies) p.heal();
    },
    close: async () => {
      await client.close();
      await admin.close();
      await raw.close();
      for (const p of proxies) await p.close();
      await server.dispose();
    },
  };
}

async function runOne(kind: 'sqlite' | 'nats', runSeed: number): Promise<boolean> {
  const random = prng(runSeed);
  const dir = mkdtempSync(join(tmpdir(), `sessiond-chaos-${kind}-`));
  const backend =
    kind === 'sqlite'
      ? await sqliteBackend(dir)
      : clusterSize !== undefined
        ? await clusterBackend(dir, nWorkers, BIN, clusterSize)
        : await natsBackend(dir, nWorkers);
  const skewIndex = hasFaketime ? nWorkers - 1 : -1;
  const workers: Worker[] = Array.from({ length: nWorkers }, (_, i) => {
    const w: Worker = {
      name: `w${i + 1}`,
      proc: undefined,
      state: 'dead',
      skewed: i === skewIndex,
      start() {
        if (closing) return;
        const argv = [
          BIN,
          'start',
          ...backend.workerArgs(i),
          '--lease-ms',
          String(LEASE_MS),
          '--heartbeat-ms',
          String(HEARTBEAT_MS),
          '--sweep-ms',
          String(SWEEP_MS),
          '--runner',
          WAITING_RUNNER,
          '--max-pending-inputs',
          String(HOSTILE_LIMITS.maxPendingInputs),
          '--max-prompt-bytes',
          String(HOSTILE_LIMITS.maxPromptBytes),
        ];
        const out = createWriteStream(join(dir, `${w.name}.log`), { flags: 'a' });
        // the skewed worker is node itself with libfaketime preloaded (not the `faketime` wrapper, which
        // forks: signals sent to it never reached the worker, and a SIGKILL left the worker running)
        const skew = w.skewed ? { LD_PRELOAD: LIBFAKETIME, FAKETIME: SKEW, FAKETIME_DONT_FAKE_MONOTONIC: '1' } : {};
        const env = { ...process.env, FORCE_COLOR: '0', SESSIOND_LOG_FORMAT: 'text', CHAOS_ECHO_DELAY_MS: String(ECHO_DELAY_MS), ...skew };
        const proc = spawn(process.execPath, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
        proc.stdout!.pipe(out);
        proc.stderr!.pipe(out);
        proc.on('exit', () => {
          if (w.proc === proc) w.state = 'dead';
        });
        w.proc = proc;
        w.state = 'running';
      },
    };
    return w;
  });
  let closing = false;
  let ok = false;
  const faults: Record<string, number> = {};
  const count = (what: string) => {
    faults[what] = (faults[what] ?? 0) + 1;
  };
  let admitted = 0;
  const acknowledged: string[] = [];
  let driverErrors = 0;
  let hostileRounds = 0;
  const hostileFindings: string[] = [];
  const started = Date.now();
  const say = (line: string) => process.stdout.write(`[${kind} ${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s] ${line}\n`);
  say(
    `seed ${runSeed}: ${backend.label ?? kind}; ${nWorkers} workers, ${nSessions} sessions, ${seconds} s of faults; lease ${LEASE_MS} ms, sweep ${SWEEP_MS} ms${skewIndex >= 0 ? `; ${workers[skewIndex]!.name} runs with its clock ${SKEW}` : '; faketime not installed: no clock skew'}; output in ${dir}`,
  );
  try {
    for (const w of workers) w.start();
    const until = Date.now() + seconds * 1000;
    // the driver: prompts (some steering) to random sessions, a few at a time
    const driver = (async () => {
      let n = 0;
      while (Date.now() < until) {
        const session = `ses_${Math.floor(random() * nSessions)}`;
        const wait = random();
        const words = [...Array.from({ length: 1 + Math.floor(random() * 6) }, (_, k) => `w${k}`), ...(wait < 0.1 ? ['ask'] : wait < 0.2 ? ['nap'] : [])].join(
          ' ',
        );
        const id = `inp_${runSeed}_${++n}`;
        await backend.admit(session, id, words, random() < 0.15 ? 'steer' : 'queue').then(
          () => {
            admitted++;
            acknowledged.push(id);
          },
          () => {
            driverErrors++;
          },
        );
        await sleep(80 + Math.floor(random() * 220));
      }
    })();
    // the faults
    while (Date.now() < until) {
      await sleep(400 + Math.floor(random() * 1_200));
      const r = random();
      const running = workers.filter((w) => w.state === 'running');
      const victim = running[Math.floor(random() * running.length)];
      if (r < 0.22 && victim) {
        victim.proc!.kill('SIGKILL');
        victim.state = 'dead';
        count('SIGKILL');
        const after = Math.floor(random() * 1_500);
        say(`SIGKILL ${victim.name}; restart in ${after} ms`);
        setTimeout(() => {
          if (victim.state === 'dead' && Date.now() < until) victim.start();
        }, after);
      } else if (r < 0.38 && victim) {
        victim.proc!.kill('SIGSTOP');
        victim.state = 'stopped';
        count('SIGSTOP past the lease');
        const forMs = Math.floor(LEASE_MS * (1.2 + random()));
        say(`SIGSTOP ${victim.name} for ${forMs} ms`);
        setTimeout(() => {
          if (victim.state === 'stopped') {
            victim.proc!.kill('SIGCONT');
            victim.state = 'running';
          }
        }, forMs);
      } else if (r < 0.52 && victim) {
        const proc = victim.proc!;
        proc.kill('SIGTERM');
        victim.state = 'dead';
        count('SIGTERM');
        say(`SIGTERM ${victim.name}`);
        proc.once('exit', () => {
          if (victim.state === 'dead' && Date.now() < until) victim.start();
        });
      } else if (r < 0.66) {
        const session = `ses_${Math.floor(random() * nSessions)}`;
        count('cancel');
        await backend.cancel(session).catch(() => {
          driverErrors++;
        });
      } else if (r < 0.78) {
        const did = await hostileAction(random, backend, nSessions, `${runSeed}_${++hostileRounds}`);
        count(`hostile ${did.kind}`);
        say(did.detail);
        acknowledged.push(...did.admitted);
        admitted += did.admitted.length;
        hostileFindings.push(...did.unexpected);
      } else if (r < 0.9) {
        const session = `ses_${Math.floor(random() * nSessions)}`;
        const decided = await decideAll(backend, [session], random).catch(() => {
          driverErrors++;
          return 0;
        });
        if (decided > 0) count('approval decided');
      } else if (backend.fault) {
        const did = await backend.fault(random, workers, say);
        if (did) {
          count(did.kind);
          say(did.detail);
        }
      }
    }
    await driver;
    // quiescence: no more faults; every worker runs again; the work must drain within a deadline
    say('quiescence: faults stopped, every worker running again');
    await backend.heal?.();
    for (const w of workers) {
      if (w.state === 'stopped') {
        w.proc!.kill('SIGCONT');
        w.state = 'running';
      }
      if (w.state === 'dead') w.start();
    }
    const deadline = Date.now() + LEASE_MS + SWEEP_MS + 45_000;
    let readError: unknown;
    const read = async () => {
      // a read can fail while the server restarts: try again until the deadline, never judge an unread log
      for (;;) {
        try {
          return await backend.readLog();
        } catch (err) {
          readError = err;
          if (Date.now() > deadline) throw new Error(`could not read the log: ${String(err)}`);
          await sleep(500);
        }
      }
    };
    // a person answers every turn still waiting for one (a waiting turn holds its session's prompts)
    const sessionIds = Array.from({ length: nSessions }, (_, i) => `ses_${i}`);
    let log = await read();
    for (;;) {
      await decideAll(backend, sessionIds, random).catch(() => 0);
      const stranded = check(log.events, { quiescent: true }).filter((f) => f.check === 'nothing_stranded');
      if (stranded.length === 0 || Date.now() > deadline) break;
      await sleep(500);
      log = await read();
    }
    void readError;
    const quiescentAfter = ((Date.now() - until) / 1000).toFixed(1);
    const findings: Finding[] = check(log.events, { quiescent: true });
    const types = (t: string) => log.events.filter((e) => e.type === t).length;
    say(
      `faults: ${
        Object.entries(faults)
          .map(([k, v]) => `${v} ${k}`)
          .join(', ') || 'none'
      }`,
    );
    say(
      `work: ${admitted} prompts admitted (${driverErrors} driver calls failed under faults), ${types('execution.claimed')} claims, ${types('execution.settled')} settled turns, ${types('execution.cancelled')} cancelled, ${types('recovery.started')} recoveries; ${log.events.length} events${log.unreadable ? `, ${log.unreadable} unreadable messages` : ''}; drained ${quiescentAfter} s after the faults stopped`,
    );
    say(
      `waits: ${types('wait.started')} started (${log.events.filter((e) => e.type === 'wait.started' && e.payload.kind === 'timer').length} timers), ${types('wait.resolved')} ended, ${types('tool.started')} approved calls run`,
    );
    say(`checks: ${CHECKS.map((c) => `${c} ${findings.filter((f) => f.check === c).length}`).join(', ')}`);
    for (const f of findings.slice(0, 30)) say(`VIOLATION ${f.check}: ${f.message}`);
    if (findings.length > 30) say(`... and ${findings.length - 30} more`);
    if (log.unreadable > 0) say(`VIOLATION: ${log.unreadable} stored messages are not event batches`);
    const inLog = new Set(log.events.flatMap((e) => (e.type === 'input.admitted' ? [String(e.payload.inputId)] : [])));
    const lost = acknowledged.filter((id) => !inLog.has(id));
    if (lost.length > 0) say(`VIOLATION: ${lost.length} admissions acknowledged to the driver are not in the log: ${lost.slice(0, 5).join(', ')}`);
    for (const h of hostileFindings.slice(0, 10)) say(`VIOLATION hostile client: ${h}`);
    ok = findings.length === 0 && log.unreadable === 0 && lost.length === 0 && hostileFindings.length === 0;
    say(ok ? 'PASS' : `FAIL (seed ${runSeed}; worker output kept in ${dir})`);
    return ok;
  } finally {
    closing = true;
    for (const w of workers) {
      if (w.state === 'stopped') w.proc?.kill('SIGCONT');
      w.proc?.kill('SIGKILL');
    }
    await Promise.all(
      workers.map((w) => (w.proc && w.proc.exitCode === null && w.proc.signalCode === null ? new Promise((r) => w.proc!.once('exit', r)) : undefined)),
    );
    await backend.close().catch(() => undefined);
    if (ok) rmSync(dir, { recursive: true, force: true });
  }
}

/** Decides every open approval of these sessions (70 % approved); how many were decided. */
async function decideAll(backend: Backend, sessionIds: string[], random: () => number): Promise<number> {
  let n = 0;
  for (const session of sessionIds) {
    for (const callId of await backend.openApprovals(session)) {
      await backend.decide(session, callId, random() < 0.7);
      n++;
    }
  }
  return n;
}

let failed = 0;
for (const [i, kind] of backends.entries()) {
  if (!(await runOne(kind, seed + i))) failed++;
}
process.stdout.write(`chaos: ${backends.length - failed} of ${backends.length} runs clean (seed ${seed})\n`);
process.exit(failed === 0 ? 0 : 1);
