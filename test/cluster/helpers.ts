// Helpers for the failover tests on a real 3-server NATS cluster (src/testing/nats-cluster.ts):
// a world (cluster, worker processes, clients) torn down whatever happens, the stream raised to 3
// replicas with the real `sessiond setup`, admissions that retry through outages, a recorder of what
// the workers were acknowledged (their live publications), a raw reader for the fault suite's
// independent checker, and the checks every failover test ends with.
//
// The workers are real `sessiond start --nats u1,u2,u3` processes, started with test/nats/cluster.ts.
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
import { CHECKS, check, fromStreamMessage, type RawEvent } from '../../chaos/checker.ts';
import { auditLog } from '../../src/audit/audit-log.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { SessiondClient } from '../../src/client/client.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import type { LiveMessage } from '../../src/nats/live-bus.ts';
import { STREAM_NAME } from '../../src/nats/subjects.ts';
import {
  REPLICATED_FENCING_SINCE,
  fencesReplicatedStreams,
  natsServerVersion,
  startNatsCluster,
  type NatsCluster,
  type NatsClusterNode,
} from '../../src/testing/nats-cluster.ts';
import { ADMIN, CLIENT, OBSERVER, WORKER } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { runCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { assertContinuationChainsSucceed } from '../support/continuations.ts';
import { analyse, allDone, describeOpen, killAll, pollLog, startWorkers, type LogAnalysis, type WorkerFlags, type WorkerProc } from '../nats/cluster.ts';

export const SERVER_VERSION = natsServerVersion();
/**
 * The events stream's replicas in these tests: 3 on a nats-server that fences appends on a replicated
 * stream, 1 (on the same 3-server cluster) on one that does not, such as Debian bookworm's 2.9.10:
 * there concurrent appends expecting the same session sequence are all stored (fencing.test.ts
 * shows it), so a 3-replica stream would let two workers own a session. SESSIOND_CLUSTER_REPLICAS=1
 * or 3 forces it (3 on 2.9.10 shows the tests catching that defect).
 */
const FORCED = process.env.SESSIOND_CLUSTER_REPLICAS;
export const REPLICAS = FORCED === '1' || FORCED === '3' ? Number(FORCED) : fencesReplicatedStreams(SERVER_VERSION) ? 3 : 1;
export const MODE =
  FORCED === '1' || FORCED === '3'
    ? `nats-server ${SERVER_VERSION}: the events stream has ${REPLICAS} replica(s), forced by SESSIOND_CLUSTER_REPLICAS${REPLICAS === 3 && !fencesReplicatedStreams(SERVER_VERSION) ? ' (this server does not fence replicated streams: expect the checks to fail)' : ''}`
    : REPLICAS === 3
      ? `nats-server ${SERVER_VERSION}: the events stream has 3 replicas`
      : `nats-server ${SERVER_VERSION} does not fence appends on a replicated stream (nats-server#4320 and #5644, fixed by ${REPLICATED_FENCING_SINCE}): ` +
        "the events stream runs with 1 replica on the 3-server cluster; npm test runs them on the project's nats-server (scripts/tools.mjs) with 3";

export interface ClusterWorld {
  cluster: NatsCluster;
  tmp: ReturnType<typeof tempDir>;
  workers: WorkerProc[];
  closers: (() => Promise<unknown>)[];
  /** Progress lines, printed on failure with the workers' output. */
  notes: string[];
  note(line: string): void;
}

type ClusterOptions = Parameters<typeof startNatsCluster>[0];

/** A fresh cluster (started with `options`), temp dir and worker list. */
async function openWorld(options: ClusterOptions = {}): Promise<ClusterWorld> {
  const t0 = Date.now();
  const notes: string[] = [];
  const w: ClusterWorld = {
    cluster: await startNatsCluster(options),
    tmp: tempDir('sessiond-cluster-'),
    workers: [],
    closers: [],
    notes,
    note: (line) => notes.push(`+${Date.now() - t0} ms ${line}`),
  };
  // the workers' projection files go however the process ends (the cluster harness and the CLI
  // helper kill their processes on exit themselves)
  const removeOnExit = () => w.tmp.remove();
  process.on('exit', removeOnExit);
  w.closers.unshift(async () => {
    process.off('exit', removeOnExit);
  });
  return w;
}

/** Keeps the workers' output, the servers' last log lines and the notes of a failed test in a temp dir, and says where. */
function keepFailure(w: ClusterWorld, name: string): void {
  const dir = mkdtempSync(join(tmpdir(), `sessiond-cluster-failure-${name}-`));
  for (const p of w.workers) writeFileSync(join(dir, `${p.name}.out`), p.timed.map((l) => `${l.t} ${l.line}`).join('\n'));
  for (const n of w.cluster.nodes) writeFileSync(join(dir, `${n.name}.log`), n.log());
  writeFileSync(join(dir, 'notes.txt'), w.notes.join('\n'));
  process.stderr.write(`cluster ${name}: the workers' output, the servers' last log lines and the test's notes are in ${dir}\n`);
}

/** Kills the workers, closes the clients, stops the cluster, removes the temp dir. */
async function closeWorld(w: ClusterWorld): Promise<void> {
  // a client of a stopped server would wait on it to close
  for (const n of w.cluster.nodes) n.resume();
  await killAll(w.workers);
  for (const close of w.closers.reverse()) await close().catch(() => undefined);
  await w.cluster.dispose();
  w.tmp.remove();
}

/**
 * Runs `body` with a fresh cluster (started with `options`), temp dir and worker list; kills and
 * closes everything afterwards, pass or fail.
 */
export async function withCluster(name: string, body: (w: ClusterWorld) => Promise<void>, options: ClusterOptions = {}): Promise<void> {
  const w = await openWorld(options);
  try {
    await body(w);
  } catch (err) {
    keepFailure(w, name);
    throw err;
  } finally {
    await closeWorld(w);
  }
}

export type Begun = Awaited<ReturnType<typeof begin>>;

/**
 * Several tests of a suite on one world (one cluster, the same three workers), one after the other,
 * to save the 10-15 s of set-up each: the first opens it (`begin`), each starts where the last left
 * it (placements and leader looked up again; the checks judge the whole log, and the workers must
 * still be the first ones), and `close()` (the suite's `after`) ends it. A failure keeps the output
 * and ends the world: the next test opens a new one.
 */
export function sharedWorld(name: string, options: ClusterOptions = {}, envOf?: (name: string) => NodeJS.ProcessEnv | undefined) {
  let world: ClusterWorld | undefined;
  let begun: Promise<Begun> | undefined;
  return {
    test: (label: string, body: (w: ClusterWorld, begun: Begun) => Promise<void>) => async () => {
      try {
        begun ??= openWorld(options).then((w) => {
          world = w;
          return begin(w, envOf);
        });
        const b = await begun;
        await body(world!, { ...b, ...(await where(world!, b.workers)) });
      } catch (err) {
        // a failed test may leave its fault in place (a node cut off, stopped): the next one starts afresh
        if (world) {
          keepFailure(world, `${name}-${label}`);
          await closeWorld(world);
        }
        world = undefined;
        begun = undefined;
        throw err;
      }
    },
    close: async () => {
      if (world) await closeWorld(world);
    },
  };
}

export const FLAGS: WorkerFlags = { leaseMs: 2000, heartbeatMs: 500, sweepMs: 300, echoDelayMs: 500 };

/** `sessiond setup --replicas N` as the admin user, run again while it fails (see below); returns its output. */
export async function setupStream(cluster: NatsCluster, replicas: number, note: (line: string) => void = () => undefined): Promise<string> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const r = await runCli(['setup', '--nats', cluster.url, '--nats-user', ADMIN.user, '--nats-pass', ADMIN.pass, '--replicas', String(replicas)]);
    if (r.code === 0) return r.stdout;
    // a stream request unanswered while the cluster's meta leader is busy fails setup at once
    // (the notes, "a worker started while JetStream is not ready exits"); an operator runs it again
    if (Date.now() > deadline) assert.unreachable(`sessiond setup --replicas ${replicas} kept failing: ${r.stdout}${r.stderr}`);
    note(`setup --replicas ${replicas} failed (${r.code}), again: ${r.stderr.trim()}`);
  }
}

/**
 * The stream created by `sessiond setup` (1 replica), three workers with every server in `--nats`,
 * then, for 3 replicas, the stream raised by `sessiond setup --replicas 3` while they run.
 *
 * Raising the replicas while the workers run is an online R1 -> R3 upgrade (a worker leaves the
 * stream's replicas as the operator set them, so it would also start on an R3 stream). No worker is
 * restarted afterwards in these tests (they must survive every fault without one).
 */
export async function startClusterWorkers(
  w: ClusterWorld,
  flags: WorkerFlags = FLAGS,
  envOf?: (name: string) => NodeJS.ProcessEnv | undefined,
): Promise<WorkerProc[]> {
  assert.match(await setupStream(w.cluster, 1, w.note), '1 replica,');
  // the cluster's `url` is its three URLs comma-separated, as `sessiond --nats` takes them
  const workers = await startWorkers(w.cluster, 3, w.tmp.file, flags, w.workers, envOf);
  if (REPLICAS > 1) assert.match(await setupStream(w.cluster, REPLICAS, w.note), `${REPLICAS} replicas`);
  const info = await w.cluster.waitStreamCurrent(STREAM_NAME, { replicas: REPLICAS });
  w.note(`stream ${STREAM_NAME} R${REPLICAS}, leader ${info.cluster?.leader}; workers ${workers.map((x) => `${x.name}=${x.ownerId}`).join(' ')}`);
  return workers;
}

export async function client(w: ClusterWorld, servers: string[] = w.cluster.urls, user: { user: string; pass: string } = CLIENT): Promise<SessiondClient> {
  const c = await SessiondClient.connect({ connection: { servers, ...user, reconnectWaitMs: 50 } });
  w.closers.push(() => c.close());
  return c;
}

/**
 * A worker-user reader of the whole log over every server. It does not create or verify the stream
 * (`ensureStream: false`): verifying asks for 1 replica and a worker user may not change it (see
 * startClusterWorkers).
 */
export async function reader(w: ClusterWorld, servers: string[] = w.cluster.urls): Promise<JetStreamEventLog> {
  const log = await JetStreamEventLog.open({ connection: { servers, ...WORKER, reconnectWaitMs: 50, name: 'cluster-test-reader' }, ensureStream: false });
  w.closers.push(() => log.close());
  return log;
}

/**
 * Every committed event the workers published live, as the observer user: a worker publishes an
 * event on its live subject only after the server acknowledged its append, so each one seen here
 * is an acknowledged write (live delivery is best effort: an outage may hide some, never invent).
 */
export async function recordAcknowledged(w: ClusterWorld): Promise<LiveMessage[]> {
  const watcher = await client(w, w.cluster.urls, OBSERVER);
  const seen: LiveMessage[] = [];
  await watcher.subscribe(
    {},
    (m) => {
      if (m.seq !== undefined) {
        (m as { arrived?: number }).arrived = Date.now();
        seen.push(m);
      }
    },
    { dedupe: false },
  );
  return seen;
}

/**
 * Admits one prompt per session, each with its own input id, retrying the same id through outages
 * (timeouts, no worker) until `timeoutMs`: resolves with the input ids, all acknowledged.
 */
export function admitAll(c: SessiondClient, sessions: string[], label: string, options: { wake?: boolean; timeoutMs?: number } = {}): Promise<string[]> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const all = Promise.all(
    sessions.map(async (s, i) => {
      const id = `inp_${label}_${i}`;
      for (let attempt = 1; ; attempt++) {
        try {
          const receipt = await c.admit(s, { id, prompt: `hello ${label} number ${i} from the cluster test`, wake: options.wake ?? true });
          return receipt.inputId;
        } catch (err) {
          // an admission is idempotent by id: sending it again is always safe
          if (Date.now() > deadline) throw new Error(`admitting ${id} to ${s} failed ${attempt} times until the deadline; last: ${String(err)}`);
        }
      }
    }),
  );
  all.catch(() => undefined); // callers may await it after other steps; its failure still reaches them
  return all;
}

export const sessionsNamed = (label: string, n: number) => Array.from({ length: n }, (_, i) => `ses_${label}_${i}`);

/**
 * Waits until at least half of the given sessions are mid-turn at once, judged on the acknowledged
 * events seen live (claimed, a step started, not settled): a whole-log read takes too long on a
 * loaded cluster to catch turns of about a second in flight. Returns the acknowledged events so far.
 */
export async function untilMidTurn(acked: LiveMessage[], sessions: string[], what: string): Promise<LiveMessage[]> {
  const wanted = new Set(sessions);
  await waitFor(
    () => {
      const running = new Map<string, string>(); // session -> execution with a step started
      const settled = new Set<string>();
      for (const m of acked) {
        if (!wanted.has(m.sessionId)) continue;
        const exe = (m.payload as { executionId?: string }).executionId;
        if (m.type === 'step.started' && exe) running.set(m.sessionId, exe);
        if ((m.type === 'execution.settled' || m.type === 'recovery.started') && exe) settled.add(exe);
      }
      return [...running.values()].filter((exe) => !settled.has(exe)).length * 2 >= sessions.length;
    },
    { timeoutMs: 20_000, intervalMs: 10, what },
  ).catch((err: Error) => {
    const mine = acked.filter((m) => wanted.has(m.sessionId));
    throw new Error(
      `${err.message}: ${acked.length} acknowledged events seen live, ${mine.length} of these sessions: ${mine
        .slice(0, 40)
        .map((m) => `${m.sessionId}#${m.seq} ${m.type} +${(m as { arrived?: number }).arrived! - m.time}ms`)
        .join(', ')}`,
    );
  });
  return [...acked];
}

/** Polls the log until no work is left (every input promoted, every execution ended). */
export function untilAllDone(log: JetStreamEventLog, inputs: string[], what: string, timeoutMs = 60_000): Promise<SessionEvent[]> {
  return pollLog(log, (events) => allDone(analyse(events), inputs), what, { timeoutMs, describe: describeOpen });
}

/** The whole stream read raw as the admin user (an ordered consumer), for the fault suite's checker. */
export async function readRaw(cluster: NatsCluster): Promise<{ events: RawEvent[]; unreadable: number; messages: number }> {
  const js = jetstream(await cluster.adminConnection());
  const consumer = await js.consumers.get(STREAM_NAME, { deliver_policy: DeliverPolicy.All });
  const events: RawEvent[] = [];
  let unreadable = 0;
  let messages = 0;
  if ((await consumer.info(true)).num_pending === 0) return { events, unreadable, messages };
  const iter = await consumer.consume({ max_messages: 256 });
  for await (const m of iter) {
    messages++;
    try {
      events.push(...fromStreamMessage(m.data));
    } catch {
      unreadable++;
    }
    if (m.info.pending === 0) break;
  }
  await iter.close();
  return { events, unreadable, messages };
}

/** Where a worker's two connections are: its log connection and its command connection. */
export interface Placement {
  worker: WorkerProc;
  log?: NatsClusterNode;
  commands?: NatsClusterNode;
}

/** The local TCP ports of a process's sockets (Linux: its fds' socket inodes, looked up in /proc/net/tcp). */
function localPorts(pid: number): Set<number> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      /* closed meanwhile */
    }
  }
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length > 9 && inodes.has(cols[9]!)) ports.add(parseInt(cols[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

/**
 * Which server each worker's connections are on, from each node's /connz (the connection's name and
 * client port) and the worker processes' own sockets: `sessiond --nats u1,u2,u3` picks a server at
 * random, so the tests look where the workers went and choose their victims from that.
 */
export async function placements(cluster: NatsCluster, workers: WorkerProc[]): Promise<Placement[]> {
  const conns: { node: NatsClusterNode; name?: string; port: number }[] = [];
  for (const n of cluster.nodes) {
    if (!n.running) continue;
    const connz = await n.monitor<{ connections?: { name?: string; port: number }[] }>('/connz?limit=1024').catch(() => ({ connections: [] }));
    for (const c of connz.connections ?? []) conns.push({ node: n, name: c.name, port: c.port });
  }
  return workers.map((worker) => {
    const ports = worker.child.pid !== undefined && worker.child.exitCode === null ? localPorts(worker.child.pid) : new Set<number>();
    const mine = conns.filter((c) => ports.has(c.port));
    return { worker, log: mine.find((c) => c.name === 'sessiond-worker')?.node, commands: mine.find((c) => c.name === 'sessiond-commands')?.node };
  });
}

export function describePlacements(ps: Placement[]): string {
  return ps.map((p) => `${p.worker.name}: log on ${p.log?.name ?? '-'}, commands on ${p.commands?.name ?? '-'}`).join('; ');
}

/** Waits until every worker has both connections up, on nodes in `on` (the survivors); returns where. */
export async function untilWorkersOn(cluster: NatsCluster, workers: WorkerProc[], on: NatsClusterNode[], what: string): Promise<Placement[]> {
  let last: Placement[] = [];
  await waitFor(
    async () => {
      last = await placements(cluster, workers);
      return last.every((p) => p.log && p.commands && on.includes(p.log) && on.includes(p.commands));
    },
    { timeoutMs: 30_000, intervalMs: 100, what },
  ).catch((err: Error) => {
    throw new Error(`${err.message}; last: ${describePlacements(last)}`);
  });
  return last;
}

/** How many of the workers' connections are on `node`. */
export const connectionsOn = (ps: Placement[], node: NatsClusterNode) => ps.filter((p) => p.log === node).length + ps.filter((p) => p.commands === node).length;

/** Each node's own view of the stream (monitoring /jsz): its last sequence and message count. */
export async function replicaStates(cluster: NatsCluster): Promise<{ node: string; messages: number; lastSeq: number }[]> {
  type Jsz = { account_details?: { stream_detail?: { name: string; state: { messages: number; last_seq: number } }[] }[] };
  return Promise.all(
    cluster.nodes
      .filter((n) => n.running)
      .map(async (n) => {
        const jsz = await n.monitor<Jsz>('/jsz?accounts=true&streams=true');
        const s = (jsz.account_details ?? []).flatMap((a) => a.stream_detail ?? []).find((d) => d.name === STREAM_NAME);
        return { node: n.name, messages: s?.state.messages ?? -1, lastSeq: s?.state.last_seq ?? -1 };
      }),
  );
}

/** Waits until the REPLICAS nodes holding the stream hold the same messages (the replicas converged). */
export async function untilReplicasEqual(cluster: NatsCluster, what: string): Promise<{ node: string; messages: number; lastSeq: number }[]> {
  let last: { node: string; messages: number; lastSeq: number }[] = [];
  await waitFor(
    async () => {
      last = (await replicaStates(cluster).catch(() => [])).filter((r) => r.lastSeq >= 0);
      return last.length === REPLICAS && last.every((r) => r.lastSeq === last[0]!.lastSeq && r.messages === last[0]!.messages && r.lastSeq > 0);
    },
    { timeoutMs: 30_000, intervalMs: 100, what },
  ).catch((err: Error) => {
    throw new Error(`${err.message}; last: ${JSON.stringify(last)}`);
  });
  return last;
}

/**
 * The checks every failover test ends with, on the final log:
 * - the fault suite's independent checker (chaos/checker.ts, its own decoder and rules) finds
 *   nothing on the raw stream: fencing, single owner, lease, promotion, recovery, nothing stranded;
 *   and every stored message is an event batch;
 * - sessiond's own audit finds nothing;
 * - no acknowledged event lost: every event a worker published live (after its append was
 *   acknowledged) is in the log with the same id at the same session seq and stream position, and
 *   every admission acknowledged to the client is in the log;
 * - none doubled: no event id twice; every input admitted once and promoted once;
 * - every admitted input run: each execution ended once, each user input's turn (or, when its
 *   owner was lost, its continuation's) settled `succeeded`.
 * Returns the analysis and the executions that were recovered.
 */
export async function assertClusterLog(
  w: ClusterWorld,
  events: SessionEvent[],
  acked: LiveMessage[],
  userInputs: string[],
): Promise<{ a: LogAnalysis; recovered: string[]; raw: number }> {
  const raw = await readRaw(w.cluster);
  const findings = check(raw.events, { quiescent: true });
  assert.equal(
    findings.map((f) => `${f.check}: ${f.message}`),
    [],
    `the fault suite's checker on the stream (${CHECKS.join(', ')})`,
  );
  assert.is(raw.unreadable, 0, 'every stored message is an event batch');
  assert.is(raw.events.length, events.length, 'the raw read and the log read see the same events');

  const a = analyse(events);
  assert.equal(auditLog(events), [], 'auditLog: no two live owners, each input promoted once, no zombie writes, recovered once');
  assert.equal(a.duplicateIds, [], 'no event id appears twice in the log');

  const at = new Map(events.map((e) => [e.id, e]));
  const lost = acked.filter((m) => {
    const e = at.get(m.id);
    return !e || e.sessionId !== m.sessionId || e.seq !== m.seq || e.position !== m.position;
  });
  assert.equal(
    lost.map((m) => `${m.sessionId}#${m.seq} ${m.type} ${m.id} at ${m.position}`),
    [],
    `every acknowledged event (${acked.length} seen live) is in the log where it was acknowledged`,
  );

  for (const id of userInputs) assert.ok(a.admitted.has(id), `acknowledged admission ${id} is in the log`);
  const recovered: string[] = [];
  for (const [id, list] of a.admitted) {
    assert.is(list.length, 1, `input ${id} admitted once`);
    assert.is(a.promoted.get(id)?.length ?? 0, 1, `input ${id} promoted exactly once`);
  }
  for (const x of a.executions.values()) {
    assert.is(x.settled.length + x.recoveryStarted.length, 1, `execution ${x.id} (${x.sessionId}, ${x.ownerId}) ended exactly once`);
    if (x.settled.length === 1)
      assert.is(x.settled[0]!.payload.outcome, 'succeeded', `execution ${x.id} succeeded: ${JSON.stringify(x.settled[0]!.payload.error)}`);
    else recovered.push(x.id);
  }
  assertContinuationChainsSucceed(a, userInputs);
  return { a, recovered, raw: raw.messages };
}

/** The workers are the processes started at the beginning: none exited, none was restarted. */
export function assertWorkersKeptRunning(workers: WorkerProc[], pids: (number | undefined)[]): void {
  assert.equal(
    workers.map((x) => x.child.exitCode ?? x.child.signalCode),
    workers.map(() => null),
    'no worker exited',
  );
  assert.equal(
    workers.map((x) => x.child.pid),
    pids,
    'the same worker processes (no restart)',
  );
}

/** The workers up, the stream at REPLICAS, a recorder of acknowledged events, a reader, and where each worker's connections went. */
export async function begin(w: ClusterWorld, envOf?: (name: string) => NodeJS.ProcessEnv | undefined) {
  const workers = await startClusterWorkers(w, FLAGS, envOf);
  const pids = workers.map((x) => x.child.pid);
  const acked = await recordAcknowledged(w);
  const log = await reader(w);
  return { workers, pids, acked, log, ...(await where(w, workers)) };
}

/** Where each worker's connections are (once both are up) and which node leads the stream. */
export async function where(w: ClusterWorld, workers: WorkerProc[]): Promise<{ placed: Placement[]; holder: NatsClusterNode }> {
  const placed = await untilWorkersOn(w.cluster, workers, [...w.cluster.nodes], 'every worker to have both connections up');
  const holder = await w.cluster.streamLeader(STREAM_NAME);
  w.note(`stream led by ${holder.name}; ${describePlacements(placed)}`);
  return { placed, holder };
}

/** Of `candidates`, the node holding the most worker connections. */
export function mostConnected(placed: Placement[], candidates: readonly NatsClusterNode[]): NatsClusterNode {
  return [...candidates].sort((p, q) => connectionsOn(placed, q) - connectionsOn(placed, p))[0]!;
}

/** The workers with a connection on `node`. */
export const touching = (placed: Placement[], node: NatsClusterNode) => placed.filter((p) => p.log === node || p.commands === node).map((p) => p.worker.name);

/**
 * The node to cut off, of `candidates`: a worker with both connections elsewhere must remain, to
 * take commands and recover the cut-off workers' turns on the majority side; among such nodes,
 * preferably one holding a worker's log connection (that worker's turns are cut off), then the one
 * with the fewest workers split by it (log connection cut off, command connection not: the
 * admissions such a worker takes during the cut wait out its append retries, 60 s), then the one
 * with the most connections. (All three workers can straddle the candidates: then nobody serves
 * commands on the majority side, and only recoveries go on during the cut.)
 */
export function partitionVictim(placed: Placement[], candidates: readonly NatsClusterNode[]): NatsClusterNode {
  const leavesWhole = (n: NatsClusterNode) => placed.some((p) => p.log !== n && p.commands !== n);
  const leavesLog = (n: NatsClusterNode) => placed.some((p) => p.log !== n);
  const eligible = candidates.some(leavesWhole) ? candidates.filter(leavesWhole) : candidates.filter(leavesLog);
  const logsOn = (n: NatsClusterNode) => placed.filter((p) => p.log === n).length;
  const withLogs = eligible.some((n) => logsOn(n) > 0) ? eligible.filter((n) => logsOn(n) > 0) : eligible;
  const split = (n: NatsClusterNode) => placed.filter((p) => p.log === n && p.commands !== n).length;
  const fewest = Math.min(...withLogs.map(split));
  return mostConnected(
    placed,
    withLogs.filter((n) => split(n) === fewest),
  );
}

/** What a cut of `victim` leaves: the workers cut off (and which connections), and those whole on the majority side. */
export function cutOffBy(placed: Placement[], victim: NatsClusterNode): { cutOff: string[]; whole: string[] } {
  return {
    cutOff: placed
      .filter((p) => p.log === victim || p.commands === victim)
      .map((p) => `${p.worker.name} (${[p.log === victim ? 'log' : '', p.commands === victim ? 'commands' : ''].filter(Boolean).join(' and ')})`),
    whole: placed.filter((p) => p.log !== victim && p.commands !== victim).map((p) => p.worker.name),
  };
}

/** Everything committed before a fault (read from the log, or acknowledged and seen live) is still there, at the same positions. */
export function assertKept(before: { id: string; position?: number }[], events: SessionEvent[], what: string): void {
  const positions = new Map(events.map((e) => [e.id, e.position]));
  assert.equal(
    before.filter((e) => positions.get(e.id) !== e.position).map((e) => e.id),
    [],
    `everything committed ${what} is still there, at the same positions`,
  );
}

/** Which node `node` itself believes leads the stream (its monitoring /jsz, answered locally even when it is cut off). */
export async function leaderSeenBy(node: NatsClusterNode): Promise<string | undefined> {
  type Jsz = { account_details?: { stream_detail?: { name: string; cluster?: { leader?: string } }[] }[] };
  const jsz = await node.monitor<Jsz>('/jsz?accounts=true&streams=true');
  return (jsz.account_details ?? []).flatMap((a) => a.stream_detail ?? []).find((d) => d.name === STREAM_NAME)?.cluster?.leader;
}

/** Waits until `node` no longer believes it leads the stream; returns when (ms since the epoch). */
export async function untilSteppedDown(node: NatsClusterNode, what: string, timeoutMs = 40_000): Promise<number> {
  let last: string | undefined = '?';
  await waitFor(
    async () => {
      last = await leaderSeenBy(node).catch(() => '?');
      return last !== node.name && last !== '?';
    },
    { timeoutMs, intervalMs: 100, what },
  ).catch((err: Error) => {
    throw new Error(`${err.message}; ${node.name} last saw the leader as ${last}`);
  });
  return Date.now();
}

/** libfaketime's environment: the process's wall clock `offset` (e.g. `+1.5s`) ahead, its monotonic clock left alone. */
export const faketimeEnv = (offset: string): NodeJS.ProcessEnv => ({
  LD_PRELOAD: '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  FAKETIME: offset,
  FAKETIME_DONT_FAKE_MONOTONIC: '1',
});

/** Turns and replicas in the words every failover test's closing line uses. */
export function summary(a: LogAnalysis, recovered: string[], acked: LiveMessage[], raw: number, replicas: { node: string; lastSeq: number }[]): string {
  return `${a.executions.size} turns, ${recovered.length} recovered, ${acked.length} acknowledged events seen live, ${raw} messages; replicas ${replicas.map((r) => `${r.node}:${r.lastSeq}`).join(' ')}`;
}

/**
 * Batch A of a failover test: 12 sessions admitted (retried through outages until `timeoutMs`),
 * returned once half of them are mid-turn, with the acknowledged events seen by then. The
 * admissions and the wait overlap: an admission resent after a full queue group would come too late.
 */
export async function firstBatchMidTurn(
  c: SessiondClient,
  acked: LiveMessage[],
  label: string,
  options: { timeoutMs?: number } = {},
): Promise<{ admitting: Promise<string[]>; acked: LiveMessage[] }> {
  const sessions = sessionsNamed(label, 12);
  const admitting = admitAll(c, sessions, label, options);
  return { admitting, acked: await untilMidTurn(acked, sessions, 'the first batch to be mid-turn') };
}
