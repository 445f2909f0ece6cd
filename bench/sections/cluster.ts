/**
 * Beyond one server (issue 17), and what replication and fsync cost ("The replicated cluster, for real").
 *
 * `cluster`: in one run, side by side and in alternation, four substrates: the 3-server cluster
 * (src/testing/nats-cluster.ts, the repo's nats-cluster.conf, routes direct: the tests' partition
 * proxies would put this process's event loop on every route) with nats-server's default sync
 * (fsync every 2 minutes), the same cluster with `sync_interval: always` (fsync before every
 * acknowledgement), and one nats-server (nats.conf) with each of the two. On each:
 *
 * - the raw JetStream turn (an echo turn's 5 appends as OCC publishes awaited in sequence, 64
 *   subjects at once): the substrate's ceiling;
 * - the whole worker (`startSessiond`, as `sessiond start` runs it: engine, projector following the
 *   log, recovery sweep, every commit published live), echo runner without delay, 64 sessions each
 *   looping admit -> idle, on an events stream (and snapshot stream) the bench creates with
 *   sessiond's config and the replicas measured.
 *
 * Reported as ratios measured in the same run: the worker on the cluster R1 against one server, R3
 * against R1, `always` against the default (R3, and one server), each worker against the raw turn
 * on the same stream. Beside them: nats-server CPU per turn (the stream leader's, from
 * /proc/<pid>/stat; the sum over the three in the note), the worker's CPU per turn, one turn alone
 * (p50, an engine on its own log), and the failover gap on R3: the time from the last append
 * acknowledged before a SIGKILL of the stream's leader to the first acknowledged after it.
 *
 * `scale`: what a session subject costs nats-server. One server, one stream; one message (a typical
 * 3-event append, ~500 bytes) on each of 10,000 and 100,000 subjects (and 1,000,000 with --full):
 * the server's RSS (/varz mem, after a restart, so the steady state of a server holding that many
 * subjects, without the write path's buffers), the stream's bytes and the store on disk, and the
 * restart time (SIGTERM to healthy). The slope between levels is the cost per subject.
 */
import { eventStreamConfig } from '../../src/nats/stream.ts';
import { SNAPSHOT_STREAM, snapshotStreamConfig } from '../../src/nats/snapshot-store.ts';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream, jetstreamManager, StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { openEngine } from '../../src/engine.ts';
import { startSessiond } from '../../src/host.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { STREAM_NAME } from '../../src/nats/subjects.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { admitted } from '../../src/testing/event-log-contract.ts';
import { natsServerVersion, startNatsCluster, withJetStreamSync, type JetStreamSync, type NatsCluster } from '../../src/testing/nats-cluster.ts';
import { REPO_NATS_CONF, WORKER, startNatsServer, type NatsServer } from '../../src/testing/nats-server.ts';
import { BENCH_USER } from '../nats.ts';
import { BENCH_PROMPT } from '../lib/corpus.ts';
import { onCleanup } from '../lib/cleanup.ts';
import { countFsyncs } from '../lib/fsyncs.ts';
import { interleaved, percentile, spread, MB, type Passes } from '../lib/measure.ts';
import { fmt, say, ticker, type TargetSpec } from '../lib/report.ts';
import { CONCURRENCY, type Ctx, type Section } from '../lib/context.ts';
import { typicalMessage } from './raw.ts';
import { occPublish, type OccCounts, type OccTarget } from '../lib/occ-publish.ts';

const APPENDS_PER_TURN = 5;
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** User + system CPU of a process so far, in ms (/proc/<pid>/stat). */
function cpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return 0;
  }
}

interface Pass {
  count: number;
  ms: number;
  events: number;
  leaderCpu: number;
  allCpu: number;
  workerCpu?: number;
  bytes?: number;
  /** Raw publishes refused while their subject was where they expected, and sent again. */
  resent?: number;
}

/** A cluster or one server, as the measurements see it: where to connect, whose CPU to read, how to wait for a stream. */
interface Substrate {
  /** `cluster`, `cluster always`, `one server`, `one server always` */
  label: string;
  /** Short tag for stream and subject names. */
  tag: string;
  urls: string[];
  jsm: JetStreamManager;
  js: JetStreamClient;
  pids(): (number | undefined)[];
  /** Index into pids() of the stream's leader. */
  leader(stream: string): Promise<number>;
  /** Waits until the stream's replicas are current. */
  current(stream: string, replicas: number): Promise<void>;
  close(): Promise<void>;
}

async function bench(urls: string[], name: string): Promise<{ nc: NatsConnection; jsm: JetStreamManager; js: JetStreamClient }> {
  const nc = await connect({ servers: urls, ...BENCH_USER, name });
  return { nc, jsm: await jetstreamManager(nc), js: jetstream(nc) };
}

/** nats-server's default sync, written explicitly (the shipped nats-cluster.conf says `always`). */
const DEFAULT_SYNC: JetStreamSync = '2m';

async function clusterSubstrate(sync: JetStreamSync): Promise<Substrate & { cluster: NatsCluster }> {
  const c = await startNatsCluster({ extraUsers: [BENCH_USER], partitionable: false, jetstream: { syncInterval: sync } });
  const release = onCleanup(`nats cluster (sync ${sync})`, () => c.dispose());
  const { nc, jsm, js } = await bench(c.urls, 'bench-cluster-raw');
  return {
    cluster: c,
    label: sync === 'always' ? 'cluster always' : 'cluster',
    tag: sync === 'always' ? 'ca' : 'c',
    urls: c.urls,
    jsm,
    js,
    pids: () => c.nodes.map((n) => n.pid),
    leader: async (stream) => (await c.streamLeader(stream)).index,
    current: async (stream, replicas) => {
      await c.waitStreamCurrent(stream, { replicas });
    },
    close: async () => {
      await nc.close();
      release();
      await c.dispose();
    },
  };
}

async function serverSubstrate(ctx: Ctx, sync: JetStreamSync): Promise<Substrate> {
  const config = join(ctx.tmp, `nats-${sync}.conf`);
  writeFileSync(config, withJetStreamSync(readFileSync(REPO_NATS_CONF, 'utf8'), sync));
  const server: NatsServer = await startNatsServer({ extraUsers: [BENCH_USER], config });
  const release = onCleanup(`nats-server (sync ${sync})`, () => server.dispose());
  const { nc, jsm, js } = await bench([server.url], 'bench-one-raw');
  return {
    label: sync === 'always' ? 'one server always' : 'one server',
    tag: sync === 'always' ? 'sa' : 's',
    urls: [server.url],
    jsm,
    js,
    pids: () => [server.pid],
    leader: async () => 0,
    current: async () => undefined,
    close: async () => {
      await nc.close();
      release();
      await server.dispose();
    },
  };
}

/** CPU of the stream's leader and of all servers of `sub` over `body`. */
async function withServerCpu(sub: Substrate, stream: string, body: () => Promise<{ count: number; ms: number; events?: number }>): Promise<Pass> {
  const leader = await sub.leader(stream);
  const before = sub.pids().map(cpuMs);
  const r = await body();
  const used = sub.pids().map((pid, i) => cpuMs(pid) - before[i]!);
  return { count: r.count, ms: r.ms, events: r.events ?? 0, leaderCpu: used[leader]!, allCpu: used.reduce((a, b) => a + b, 0) };
}

/** Creates (or re-creates) a raw stream with `replicas` on `sub` and waits until every replica is current. */
async function rawStream(sub: Substrate, replicas: number): Promise<string> {
  const name = `BENCH_CLUSTER_${sub.tag.toUpperCase()}_R${replicas}`;
  await sub.jsm.streams.delete(name).catch(() => undefined);
  await sub.jsm.streams.add({ name, subjects: [`sessiond.bench.${sub.tag}r${replicas}.>`], storage: StorageType.File, num_replicas: replicas });
  await sub.current(name, replicas);
  return name;
}

/**
 * Raw turns: 5 OCC publishes of a typical append awaited in sequence per turn, 64 subjects at once
 * (each publish expects its subject's last stream sequence; a refusal while the subject is where it
 * expects, which a replicated stream answers now and then, is sent again and counted: occ-publish.ts).
 */
async function rawTurns(sub: Substrate, stream: string, replicas: number, data: Uint8Array, turns: number, tag: string): Promise<Pass> {
  const per = Math.ceil(turns / CONCURRENCY);
  const target: OccTarget = {
    publish: async (subject, bytes, last) => (await sub.js.publish(subject, bytes, { expect: { lastSubjectSequence: last } })).seq,
    lastOf: async (subject) => (await sub.jsm.streams.getMessage(stream, { last_by_subj: subject }))?.seq ?? 0,
  };
  const counts: OccCounts = { resent: 0 };
  const pass = await withServerCpu(sub, stream, async () => {
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async (_, k) => {
        const subject = `sessiond.bench.${sub.tag}r${replicas}.${tag}s${k}`;
        let last = 0;
        for (let i = 0; i < per * APPENDS_PER_TURN; i++) last = await occPublish(target, subject, data, last, counts);
      }),
    );
    return { count: per * CONCURRENCY, ms: performance.now() - t0 };
  });
  return { ...pass, resent: counts.resent };
}

/** Fresh events and snapshot streams with `replicas` on `sub`, made here with sessiond's config (a worker leaves existing replicas as they are). */
async function freshStreams(sub: Substrate, replicas: number): Promise<void> {
  for (const name of [STREAM_NAME, SNAPSHOT_STREAM]) await sub.jsm.streams.delete(name).catch(() => undefined);
  await sub.jsm.streams.add(eventStreamConfig({ replicas }));
  await sub.jsm.streams.add(snapshotStreamConfig(replicas));
  await sub.current(STREAM_NAME, replicas);
  await sub.current(SNAPSHOT_STREAM, replicas);
}

/** Whole-worker turns (startSessiond, as the worker user) on fresh streams with `replicas` on `sub`, 64 sessions. */
async function workerTurns(ctx: Ctx, sub: Substrate, replicas: number, turns: number, tag: string): Promise<Pass> {
  await freshStreams(sub, replicas);
  const host = await startSessiond({
    db: join(ctx.tmp, `cluster-${sub.tag}-r${replicas}-${tag}.db`),
    runner: echoRunner(),
    nats: { connection: { servers: sub.urls, ...WORKER, name: `bench-worker-${sub.tag}` } },
  });
  const release = onCleanup(`${sub.label} R${replicas} worker`, async () => {
    await host.close();
  });
  try {
    const engine = host.engine;
    const sessions = Array.from({ length: CONCURRENCY }, (_, k) => `ses_${sub.tag}${replicas}${tag}_${k}`);
    const turn = async (s: string) => {
      await engine.admit(s, { prompt: BENCH_PROMPT });
      await engine.awaitIdle(s);
    };
    await Promise.all(sessions.map(turn)); // warm up
    const per = Math.ceil(turns / CONCURRENCY);
    const before = await Promise.all(sessions.map((s) => engine.log.lastSeq(s)));
    const bytesBefore = (await sub.jsm.streams.info(STREAM_NAME)).state.bytes;
    const tick = ticker();
    let done = 0;
    const cpu0 = process.cpuUsage();
    const pass = await withServerCpu(sub, STREAM_NAME, async () => {
      const t0 = performance.now();
      await Promise.all(
        sessions.map(async (s) => {
          for (let r = 0; r < per; r++) {
            await turn(s);
            done++;
            tick(() => say('cluster', `worker on ${sub.label} R${replicas}: ${fmt(done)}/${fmt(per * CONCURRENCY)} turns`));
          }
        }),
      );
      return { count: per * CONCURRENCY, ms: performance.now() - t0 };
    });
    const cpu = process.cpuUsage(cpu0);
    pass.workerCpu = (cpu.user + cpu.system) / 1000;
    const after = await Promise.all(sessions.map((s) => engine.log.lastSeq(s)));
    pass.events = after.reduce((sum, v, i) => sum + v - before[i]!, 0);
    pass.bytes = (await sub.jsm.streams.info(STREAM_NAME)).state.bytes - bytesBefore;
    return pass;
  } finally {
    release();
    await host.close();
  }
}

/** p50 of `n` turns of one session alone (an engine on its own log), on a fresh stream with `replicas`. */
async function aloneP50(ctx: Ctx, sub: Substrate, replicas: number, n: number): Promise<number> {
  await freshStreams(sub, replicas);
  const log = await JetStreamEventLog.open({ connection: { servers: sub.urls, ...WORKER, name: 'bench-cluster-alone' }, ensureStream: false });
  const engine = await openEngine({ file: join(ctx.tmp, `cluster-alone-${sub.tag}-r${replicas}.db`), log, runner: echoRunner() });
  const release = onCleanup(`${sub.label} R${replicas} engine (alone)`, async () => {
    await engine.close();
    await log.close();
  });
  try {
    const turn = async () => {
      await engine.admit('ses_alone', { prompt: BENCH_PROMPT });
      await engine.awaitIdle('ses_alone');
    };
    for (let i = 0; i < 5; i++) await turn();
    const samples: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      await turn();
      samples.push(performance.now() - t0);
    }
    return percentile(samples, 50);
  } finally {
    release();
    await engine.close();
    await log.close();
  }
}

/**
 * The failover gap on a 3-replica stream: 8 sessions append one event at a time; the leader is
 * SIGKILLed; the gap is from the last append acknowledged before the killed process had exited to
 * the first acknowledged after (by the new leader); the longest gap between two acknowledgements
 * around the kill beside it. The node is restarted and caught up afterwards.
 */
async function failoverGap(
  sub: Substrate & { cluster: NatsCluster },
): Promise<{ gapMs: number; longestMs: number; electedMs: number; leader: string; next: string }> {
  const c = sub.cluster;
  await freshStreams(sub, 3);
  const log = await JetStreamEventLog.open({
    connection: { servers: c.urls, ...WORKER, name: 'bench-cluster-failover', reconnectWaitMs: 50 },
    ensureStream: false,
  });
  const release = onCleanup('cluster failover log', () => log.close());
  let stop = false;
  const acks: number[] = [];
  try {
    const loops = Array.from({ length: 8 }, async (_, i) => {
      let seq = 0;
      while (!stop) {
        try {
          seq = (await log.append(`ses_f${i}`, seq, [admitted(`append ${seq + 1}`)]))[0]!.seq;
          acks.push(performance.now());
        } catch {
          seq = await log.lastSeq(`ses_f${i}`).catch(() => seq);
        }
      }
    });
    const until = async (n: number) => {
      while (acks.length < n) await new Promise((r) => setTimeout(r, 20));
    };
    await until(200);
    const leader = await c.streamLeader(STREAM_NAME);
    await leader.kill();
    // once the process is gone (kill() waits for its exit): an acknowledgement after this is the new leader's
    const killedAt = performance.now();
    const next = await c.streamLeader(STREAM_NAME);
    const electedMs = performance.now() - killedAt;
    const atElection = acks.length;
    await until(atElection + 200);
    stop = true;
    await Promise.all(loops);
    const lastBefore = Math.max(...acks.filter((t) => t < killedAt));
    const firstAfter = Math.min(...acks.filter((t) => t >= killedAt));
    const around = acks.filter((t) => t >= killedAt - 5_000);
    let longestMs = 0;
    for (let i = 1; i < around.length; i++) longestMs = Math.max(longestMs, around[i]! - around[i - 1]!);
    await leader.start();
    await c.waitStreamCurrent(STREAM_NAME);
    return { gapMs: firstAfter - lastBefore, longestMs, electedMs, leader: leader.name, next: next.name };
  } finally {
    stop = true;
    release();
    await log.close();
  }
}

export const cluster: Section = {
  name: 'cluster',
  title:
    'the whole worker and the raw turn on one server and on a 3-server cluster (R1, R3), each with the default sync and sync_interval: always, in alternation; nats-server CPU per turn, one turn alone, the leader failover gap',
  async run(ctx) {
    const S = 'cluster';
    say(
      S,
      `starting a 3-server cluster with the default sync, one with sync_interval: always, and one nats-server with each (nats-server ${natsServerVersion()})`,
    );
    const subs: Substrate[] = [];
    try {
      const c = await clusterSubstrate(DEFAULT_SYNC);
      subs.push(c);
      const ca = await clusterSubstrate('always');
      subs.push(ca);
      const one = await serverSubstrate(ctx, DEFAULT_SYNC);
      subs.push(one);
      const onea = await serverSubstrate(ctx, 'always');
      subs.push(onea);
      const data = typicalMessage(ctx);
      // enough turns per pass that /proc's CPU ticks (10 ms) resolve the servers' CPU per turn (about
      // 1 ms of the leader's per worker turn); the raw turn twice as many (half with always: one
      // server then fsyncs every append in sequence, about 150 raw turns/s on a shared disk)
      const turns = ctx.sizes.natsTurnRounds * CONCURRENCY * 3;
      // what is measured, in the order of each round of passes
      const plan: { key: string; sub: Substrate; replicas: number; raw: boolean }[] = [
        { key: 'raw.one', sub: one, replicas: 1, raw: true },
        { key: 'raw.r1', sub: c, replicas: 1, raw: true },
        { key: 'raw.r3', sub: c, replicas: 3, raw: true },
        { key: 'raw.one.always', sub: onea, replicas: 1, raw: true },
        { key: 'raw.r3.always', sub: ca, replicas: 3, raw: true },
        { key: 'turns.one', sub: one, replicas: 1, raw: false },
        { key: 'turns.r1', sub: c, replicas: 1, raw: false },
        { key: 'turns.r3', sub: c, replicas: 3, raw: false },
        { key: 'turns.one.always', sub: onea, replicas: 1, raw: false },
        { key: 'turns.r3.always', sub: ca, replicas: 3, raw: false },
      ];
      const rawStreams = new Map<string, string>();
      for (const m of plan) if (m.raw) rawStreams.set(m.key, await rawStream(m.sub, m.replicas));
      const best: Record<string, Pass> = {};
      const resent: Record<string, { resent: number; publishes: number }> = {};
      const passes = await interleaved(
        ctx.sizes.passes,
        plan.map((m) => async (i: number) => {
          const p = m.raw
            ? await rawTurns(m.sub, rawStreams.get(m.key)!, m.replicas, data, m.key.endsWith('always') ? turns : turns * 2, `p${i}`)
            : await workerTurns(ctx, m.sub, m.replicas, turns, `p${i}`);
          if (m.raw) {
            const r = (resent[m.key] ??= { resent: 0, publishes: 0 });
            r.resent += p.resent ?? 0;
            r.publishes += p.count * APPENDS_PER_TURN;
          }
          const b = best[m.key];
          if (!b || p.count / p.ms > b.count / b.ms) best[m.key] = p;
          return p;
        }),
      );
      const P: Record<string, Passes> = Object.fromEntries(plan.map((m, i) => [m.key, passes[i]!]));
      // whether an acknowledged append was fsynced first: strace's count of fsync calls on every
      // server of the substrate over 64 raw turns (320 acknowledged appends); counts only
      const fsyncTurns = CONCURRENCY;
      for (const m of plan.filter((x) => x.raw)) {
        const pids = m.sub.pids().filter((p): p is number => p !== undefined);
        const calls = await countFsyncs(pids, ctx.tmp, async () => {
          await rawTurns(m.sub, rawStreams.get(m.key)!, m.replicas, data, fsyncTurns, 'fs');
        });
        if (calls === undefined) {
          say(S, `fsync count on ${m.sub.label} R${m.replicas}: strace missing or not permitted to attach; not measured`);
          continue;
        }
        const appends = fsyncTurns * APPENDS_PER_TURN;
        ctx.results.add({
          key: `cluster.fsync.${m.key.slice('raw.'.length)}`,
          section: S,
          figure: `fsync calls per acknowledged append, all servers (${m.sub.label}, R${m.replicas})`,
          unit: 'calls',
          value: calls / appends,
          note: `strace -f -c on ${pids.length === 1 ? 'the server' : `all ${pids.length} servers`} over ${appends} acknowledged appends (${fsyncTurns} raw turns, ${CONCURRENCY} subjects at once): ${calls} calls; 0 means an acknowledged append was only in the page cache`,
        });
      }
      const evs = (p: Pass) =>
        `${(p.events / p.count).toFixed(1)} events (${fmt(Math.round(p.bytes! / p.count))} stream bytes) per turn, ${fmt(Math.round((p.events * 1000) / p.ms))} events/s`;
      // a raw publish the stream refused while its subject was where it expected (occ-publish.ts), sent again
      const resentNote = (key: string) => {
        const r = resent[key];
        return r && r.resent > 0
          ? `; ${fmt(r.resent)} of ${fmt(r.publishes)} publishes refused with wrong last sequence while their subject was where they expected (the server's window between an ack and its in-process bookkeeping), each sent again`
          : '';
      };
      const turnsOf = (key: string, figure: string, against?: [string, string], spec?: TargetSpec) =>
        ctx.results.add(
          {
            key: `cluster.${key}`,
            section: S,
            figure,
            unit: 'turns/s',
            value: P[key]!.best,
            ...(against ? { raw: { label: against[1], value: P[against[0]]!.best, unit: 'turns/s' } } : {}),
            note: `${key.startsWith('turns') ? `${evs(best[key]!)}; ` : ''}${spread(P[key]!)}${resentNote(key)}`,
          },
          spec,
        );
      const rawTurn = `the raw turn (${APPENDS_PER_TURN} OCC publishes in sequence, ${CONCURRENCY} at once)`;
      const worker = `the whole worker (startSessiond, echo, ${CONCURRENCY} sessions)`;
      turnsOf('raw.one', `${rawTurn}, one server`);
      turnsOf('raw.r1', 'the raw turn on the cluster, R1', ['raw.one', 'the raw turn on one server']);
      turnsOf('raw.r3', 'the raw turn on the cluster, R3', ['raw.r1', 'the raw turn on R1']);
      turnsOf('raw.one.always', 'the raw turn on one server, sync_interval: always', ['raw.one', 'the same, default sync']);
      turnsOf('raw.r3.always', 'the raw turn on the cluster, R3, sync_interval: always', ['raw.r3', 'the same, default sync']);
      turnsOf('turns.one', `${worker}, one server`, ['raw.one', 'the raw turn on one server']);
      turnsOf('turns.r1', 'the whole worker on the cluster, R1', ['turns.one', 'the worker on one server']);
      // replication may cost a worker at most 30% of its turns/s (it is CPU-bound on its own side)
      turnsOf('turns.r3', 'the whole worker on the cluster, R3', ['turns.r1', 'the worker on R1'], { minRatio: 0.7 });
      ctx.results.add({
        key: 'cluster.turns.r3.raw',
        section: S,
        figure: 'the whole worker on the cluster, R3, vs the raw turn on R3',
        unit: 'turns/s',
        value: P['turns.r3']!.best,
        raw: { label: 'the raw turn on R3', value: P['raw.r3']!.best, unit: 'turns/s' },
      });
      turnsOf('turns.one.always', 'the whole worker on one server, sync_interval: always', ['turns.one', 'the same, default sync']);
      turnsOf('turns.r3.always', 'the whole worker on the cluster, R3, sync_interval: always', ['turns.r3', 'the same, default sync']);
      const perTurn = (p: Pass, cpu: 'leaderCpu' | 'allCpu') => p[cpu] / p.count;
      for (const [key, label] of [
        ['turns.one', 'worker, one server'],
        ['turns.r1', 'worker, R1'],
        ['turns.r3', 'worker, R3'],
        ['turns.r3.always', 'worker, R3 always'],
        ['raw.r1', 'R1 raw'],
        ['raw.r3', 'R3 raw'],
      ] as const) {
        const p = best[key]!;
        ctx.results.add({
          key: `cluster.server.cpu.${key}`,
          section: S,
          figure: `nats-server CPU per turn, stream leader (${label})`,
          unit: 'ms',
          value: perTurn(p, 'leaderCpu'),
          ...(key === 'turns.r3' ? { raw: { label: 'the same on R1', value: perTurn(best['turns.r1']!, 'leaderCpu'), unit: 'ms' } } : {}),
          note: `all servers together ${perTurn(p, 'allCpu').toFixed(3)} ms per turn; the best pass (${fmt(Math.round((p.count * 1000) / p.ms))} turns/s)`,
        });
      }
      for (const [key, label] of [
        ['turns.one', 'one server'],
        ['turns.r1', 'R1'],
        ['turns.r3', 'R3'],
      ] as const) {
        const p = best[key]!;
        ctx.results.add({
          key: `cluster.worker.cpu.${key}`,
          section: S,
          figure: `worker CPU per turn (the whole worker, ${label})`,
          unit: 'ms',
          value: p.workerCpu! / p.count,
          raw: { label: "the stream leader's CPU per turn", value: perTurn(p, 'leaderCpu'), unit: 'ms' },
          note: 'process.cpuUsage over the best pass; the ratio is how many worker cores one leader core keeps up with',
        });
      }
      const n = ctx.sizes.latencyTurns;
      const alone1 = await aloneP50(ctx, c, 1, n);
      const alone3 = await aloneP50(ctx, c, 3, n);
      const alone3a = await aloneP50(ctx, ca, 3, n);
      ctx.results.add({
        key: 'cluster.alone.r1',
        section: S,
        figure: 'one sessiond turn alone on the cluster, p50 (R1)',
        unit: 'ms',
        value: alone1,
        note: `${n} turns of one session (an engine on its own log)`,
      });
      ctx.results.add({
        key: 'cluster.alone.r3',
        section: S,
        figure: 'one sessiond turn alone on the cluster, p50 (R3)',
        unit: 'ms',
        value: alone3,
        raw: { label: 'the same on R1', value: alone1, unit: 'ms' },
        note: `${n} turns of one session`,
      });
      ctx.results.add({
        key: 'cluster.alone.r3.always',
        section: S,
        figure: 'one sessiond turn alone on the cluster, p50 (R3, sync_interval: always)',
        unit: 'ms',
        value: alone3a,
        raw: { label: 'the same, default sync', value: alone3, unit: 'ms' },
        note: `${n} turns of one session`,
      });
      const f = await failoverGap(c);
      ctx.results.add(
        {
          // every session stalls this long; kept well under the default lease (30 s), so an election alone
          // never lets another worker recover a running turn
          key: 'cluster.failover',
          section: S,
          figure: 'failover gap on R3: last append acknowledged before a SIGKILL of the leader to the first after',
          unit: 'ms',
          value: f.gapMs,
          note: `8 sessions appending; ${f.leader} killed, ${f.next} leading ${fmt(Math.round(f.electedMs))} ms after the kill (as the admin's stream info saw it); longest gap between two acknowledgements around the kill ${fmt(Math.round(f.longestMs))} ms; appends resent by JetStreamEventLog through the election`,
        },
        { max: 10_000 },
      );
    } finally {
      for (const sub of subs.reverse()) await sub.close().catch(() => undefined);
    }
  },
};

/** Publishes one message on each of subjects [from, to) of `prefix`, `window` at once. */
async function fillSubjects(js: JetStreamClient, prefix: string, from: number, to: number, data: Uint8Array): Promise<void> {
  const window = 512;
  let next = from;
  const tick = ticker(2000);
  await Promise.all(
    Array.from({ length: window }, async () => {
      while (next < to) {
        const i = next++;
        await js.publish(`${prefix}.ses_${i}`, data);
        tick(() => say('scale', `${fmt(i - from)}/${fmt(to - from)} subjects`));
      }
    }),
  );
}

function duBytes(dir: string): number {
  return Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split('\t')[0]);
}

export const subjectScale: Section = {
  name: 'scale',
  title: 'what a session subject costs nats-server: RSS, stream bytes, disk and restart time at 10,000 and 100,000 subjects (1,000,000 with --full)',
  async run(ctx) {
    const S = 'scale';
    const levels = ctx.full ? [10_000, 100_000, 1_000_000] : [10_000, 100_000];
    const server = await startNatsServer({ extraUsers: [BENCH_USER] });
    const releaseServer = onCleanup('scale nats-server', () => server.dispose());
    let nc: NatsConnection | undefined;
    const stream = 'BENCH_SCALE';
    try {
      const open = async () => {
        nc = await connect({ servers: server.url, ...BENCH_USER, name: 'bench-scale', reconnectTimeWait: 50, maxReconnectAttempts: -1 });
        return { jsm: await jetstreamManager(nc), js: jetstream(nc) };
      };
      let { jsm, js } = await open();
      await jsm.streams.add({ name: stream, subjects: ['sessiond.scale.>'], storage: StorageType.File, num_replicas: 1 });
      const rss = async () => {
        const r = await fetch(`http://127.0.0.1:${server.monitorPort}/varz`);
        return ((await r.json()) as { mem: number }).mem;
      };
      await nc!.close();
      await server.restart();
      const baseline = await rss();
      ({ jsm, js } = await open());
      const data = typicalMessage(ctx);
      let have = 0;
      let prev = { subjects: 0, rss: baseline };
      for (const level of levels) {
        const t0 = performance.now();
        await fillSubjects(js, 'sessiond.scale', have, level, data);
        const fillMs = performance.now() - t0;
        const written = have;
        have = level;
        const info = await jsm.streams.info(stream);
        const rssLoaded = await rss();
        await nc!.close();
        const r0 = performance.now();
        await server.restart();
        const restartMs = performance.now() - r0;
        const rssRestarted = await rss();
        ({ jsm, js } = await open());
        const disk = duBytes(server.storeDir);
        const slope = (rssRestarted - prev.rss) / (level - prev.subjects);
        prev = { subjects: level, rss: rssRestarted };
        ctx.results.add({
          key: `scale.rss.${level}`,
          section: S,
          figure: `nats-server RSS holding ${fmt(level)} session subjects (after a restart)`,
          unit: 'MB',
          value: rssRestarted / MB,
          note: `${slope.toFixed(0)} bytes per subject from the previous level; ${(rssLoaded / MB).toFixed(1)} MB right after writing them; empty server ${(baseline / MB).toFixed(1)} MB; written at ${fmt(Math.round(((level - written) * 1000) / fillMs))} subjects/s`,
        });
        ctx.results.add({
          key: `scale.bytes.${level}`,
          section: S,
          figure: `stream bytes per session subject at ${fmt(level)} (one ${data.byteLength}-byte append each)`,
          unit: 'bytes',
          value: info.state.bytes / level,
          note: `store on disk ${(disk / MB).toFixed(1)} MB (${(disk / level).toFixed(0)} bytes per subject); ${fmt(info.state.messages)} messages, ${fmt(info.state.num_subjects ?? level)} subjects`,
        });
        ctx.results.add({
          key: `scale.restart.${level}`,
          section: S,
          figure: `nats-server restart holding ${fmt(level)} session subjects (SIGTERM to healthy)`,
          unit: 'ms',
          value: restartMs,
        });
      }
    } finally {
      await nc?.close().catch(() => undefined);
      releaseServer();
      await server.dispose();
    }
  },
};
