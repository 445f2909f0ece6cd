/**
 * Beyond one server (issue 17).
 *
 * `cluster`: a 3-server cluster (src/testing/nats-cluster.ts, the repo's nats-cluster.conf, routes
 * direct: the tests' partition proxies would put this process's event loop on every route), in one
 * run and in alternation: the raw JetStream turn (an echo turn's 5 appends as OCC publishes awaited
 * in sequence, 64 subjects at once) and sessiond turns (an engine on a JetStreamEventLog, echo runner
 * without delay, 64 sessions each looping admit -> idle), each on a 1-replica and on a 3-replica
 * stream. Reported as ratios: R3 against R1 (the price of replication), sessiond against the raw turn
 * on the same stream. Beside them: the nats-server CPU per turn (the stream leader's, from
 * /proc/<pid>/stat; the sum over the three servers in the note), which says how many workers one
 * stream serves before its server is the limit; one turn alone, p50; and the failover gap: the
 * longest wait for an acknowledged append across a SIGKILL of the leader of a 3-replica stream.
 *
 * The sessiond figures use an engine with its own JetStreamEventLog on an events stream the bench
 * creates with sessiond's config and `replicas` (opened without verifying it): sessiond refuses more
 * than 1 replica on nats-server before 2.10.19, which does not fence racing appends on a replicated
 * stream (test/cluster/fencing.test.ts); one engine never races with itself, so the figures are the
 * cost of replication, not a recommendation to run R3 on 2.9.10.
 *
 * `scale`: what a session subject costs nats-server. One server, one stream; one message (a typical
 * 3-event append, ~500 bytes) on each of 10,000 and 100,000 subjects (and 1,000,000 with --full):
 * the server's RSS (/varz mem, after a restart, so the steady state of a server holding that many
 * subjects, without the write path's buffers), the stream's bytes and the store on disk, and the
 * restart time (SIGTERM to healthy). The slope between levels is the cost per subject.
 */
import { eventStreamConfig } from '../../src/nats/stream.ts';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream, jetstreamManager, StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { openEngine } from '../../src/engine.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { STREAM_NAME } from '../../src/nats/subjects.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { admitted } from '../../src/testing/event-log-contract.ts';
import { natsServerVersion, startNatsCluster, type NatsCluster } from '../../src/testing/nats-cluster.ts';
import { WORKER, startNatsServer } from '../../src/testing/nats-server.ts';
import { BENCH_USER } from '../nats.ts';
import { BENCH_PROMPT } from '../lib/corpus.ts';
import { onCleanup } from '../lib/cleanup.ts';
import { interleaved, percentile, spread, MB } from '../lib/measure.ts';
import { fmt, say, ticker } from '../lib/report.ts';
import { CONCURRENCY, type Ctx, type Section } from '../lib/context.ts';
import { typicalMessage } from './raw.ts';

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

interface Pass { count: number; ms: number; events: number; leaderCpu: number; allCpu: number; workerCpu?: number; bytes?: number }

/** CPU of the stream's leader and of all nodes over `body`. */
async function withServerCpu(c: NatsCluster, stream: string, body: () => Promise<{ count: number; ms: number; events?: number }>): Promise<Pass> {
  const leader = await c.streamLeader(stream);
  const before = c.nodes.map((n) => cpuMs(n.pid));
  const r = await body();
  const after = c.nodes.map((n) => cpuMs(n.pid));
  const used = after.map((v, i) => v - before[i]!);
  return { count: r.count, ms: r.ms, events: r.events ?? 0, leaderCpu: used[leader.index]!, allCpu: used.reduce((a, b) => a + b, 0) };
}

/** The events stream with sessiond's config and `replicas`, made here, and a log on it as the worker user. */
async function eventLog(jsm: JetStreamManager, replicas: number, name: string, c: NatsCluster): Promise<JetStreamEventLog> {
  await jsm.streams.add(eventStreamConfig({ replicas }));
  return JetStreamEventLog.open({ connection: { servers: c.urls, ...WORKER, name }, ensureStream: false });
}

/** Creates (or re-creates) a raw stream with `replicas` and waits until every replica is current. */
async function rawStream(c: NatsCluster, jsm: JetStreamManager, replicas: number): Promise<string> {
  const name = `BENCH_CLUSTER_R${replicas}`;
  await jsm.streams.delete(name).catch(() => undefined);
  await jsm.streams.add({ name, subjects: [`sessiond.bench.r${replicas}.>`], storage: StorageType.File, num_replicas: replicas });
  await c.waitStreamCurrent(name, { replicas });
  return name;
}

/** Raw turns: 5 OCC publishes of a typical append awaited in sequence per turn, 64 subjects at once. */
async function rawTurns(c: NatsCluster, js: JetStreamClient, stream: string, replicas: number, data: Uint8Array, turns: number, tag: string): Promise<Pass> {
  const per = Math.ceil(turns / CONCURRENCY);
  return withServerCpu(c, stream, async () => {
    const t0 = performance.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, async (_, k) => {
      const subject = `sessiond.bench.r${replicas}.${tag}s${k}`;
      let last = 0;
      for (let i = 0; i < per * APPENDS_PER_TURN; i++) last = (await js.publish(subject, data, { expect: { lastSubjectSequence: last } })).seq;
    }));
    return { count: per * CONCURRENCY, ms: performance.now() - t0 };
  });
}

/** sessiond turns on a fresh events stream with `replicas`: an engine on its own JetStreamEventLog, 64 sessions. */
async function sessiondTurns(ctx: Ctx, c: NatsCluster, jsm: JetStreamManager, replicas: number, turns: number, tag: string): Promise<Pass & { alone?: number }> {
  await jsm.streams.delete(STREAM_NAME).catch(() => undefined);
  const log = await eventLog(jsm, replicas, 'bench-cluster', c);
  const engine = await openEngine({ file: join(ctx.tmp, `cluster-r${replicas}-${tag}.db`), log, runner: echoRunner() });
  const release = onCleanup(`cluster R${replicas} engine`, async () => { await engine.close(); await log.close(); });
  try {
    await c.waitStreamCurrent(STREAM_NAME, { replicas });
    const sessions = Array.from({ length: CONCURRENCY }, (_, k) => `ses_c${k}`);
    const turn = async (s: string) => { await engine.admit(s, { prompt: BENCH_PROMPT }); await engine.awaitIdle(s); };
    await Promise.all(sessions.map(turn)); // warm up
    const per = Math.ceil(turns / CONCURRENCY);
    const before = await Promise.all(sessions.map((s) => engine.log.lastSeq(s)));
    const bytesBefore = (await jsm.streams.info(STREAM_NAME)).state.bytes;
    const tick = ticker();
    let done = 0;
    const cpu0 = process.cpuUsage();
    const pass = await withServerCpu(c, STREAM_NAME, async () => {
      const t0 = performance.now();
      await Promise.all(sessions.map(async (s) => {
        for (let r = 0; r < per; r++) {
          await turn(s);
          done++;
          tick(() => say('cluster', `sessiond R${replicas}: ${fmt(done)}/${fmt(per * CONCURRENCY)} turns`));
        }
      }));
      return { count: per * CONCURRENCY, ms: performance.now() - t0 };
    });
    const cpu = process.cpuUsage(cpu0);
    pass.workerCpu = (cpu.user + cpu.system) / 1000;
    const after = await Promise.all(sessions.map((s) => engine.log.lastSeq(s)));
    pass.events = after.reduce((sum, v, i) => sum + v - before[i]!, 0);
    pass.bytes = (await jsm.streams.info(STREAM_NAME)).state.bytes - bytesBefore;
    return pass;
  } finally {
    release();
    await engine.close();
    await log.close();
  }
}

/** p50 of `n` turns of one session alone, on a fresh stream with `replicas`. */
async function aloneP50(ctx: Ctx, c: NatsCluster, jsm: JetStreamManager, replicas: number, n: number): Promise<number> {
  await jsm.streams.delete(STREAM_NAME).catch(() => undefined);
  const log = await eventLog(jsm, replicas, 'bench-cluster-alone', c);
  const engine = await openEngine({ file: join(ctx.tmp, `cluster-alone-r${replicas}.db`), log, runner: echoRunner() });
  const release = onCleanup(`cluster R${replicas} engine (alone)`, async () => { await engine.close(); await log.close(); });
  try {
    await c.waitStreamCurrent(STREAM_NAME, { replicas });
    const turn = async () => { await engine.admit('ses_alone', { prompt: BENCH_PROMPT }); await engine.awaitIdle('ses_alone'); };
    for (let i = 0; i < 5; i++) await turn();
    const samples: number[] = [];
    for (let i = 0; i < n; i++) { const t0 = performance.now(); await turn(); samples.push(performance.now() - t0); }
    return percentile(samples, 50);
  } finally {
    release();
    await engine.close();
    await log.close();
  }
}

/**
 * The failover gap on a 3-replica stream: 8 sessions append one event at a time; the leader is
 * SIGKILLed; the longest time between two acknowledged appends around the kill. The node is restarted
 * and caught up afterwards.
 */
async function failoverGap(c: NatsCluster, jsm: JetStreamManager): Promise<{ gapMs: number; leader: string; next: string }> {
  await jsm.streams.delete(STREAM_NAME).catch(() => undefined);
  await jsm.streams.add(eventStreamConfig({ replicas: 3 }));
  const log = await JetStreamEventLog.open({ connection: { servers: c.urls, ...WORKER, name: 'bench-cluster-failover', reconnectWaitMs: 50 }, ensureStream: false });
  const release = onCleanup('cluster failover log', () => log.close());
  let stop = false;
  const acks: number[] = [];
  try {
    await c.waitStreamCurrent(STREAM_NAME);
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
    const until = async (n: number) => { while (acks.length < n) await new Promise((r) => setTimeout(r, 20)); };
    await until(200);
    const leader = await c.streamLeader(STREAM_NAME);
    const killedAt = performance.now();
    await leader.kill();
    const next = await c.streamLeader(STREAM_NAME);
    const atElection = acks.length;
    await until(atElection + 200);
    stop = true;
    await Promise.all(loops);
    const around = acks.filter((t) => t >= killedAt - 5_000);
    let gapMs = 0;
    for (let i = 1; i < around.length; i++) gapMs = Math.max(gapMs, around[i]! - around[i - 1]!);
    await leader.start();
    await c.waitStreamCurrent(STREAM_NAME);
    return { gapMs, leader: leader.name, next: next.name };
  } finally {
    stop = true;
    release();
    await log.close();
  }
}

export const cluster: Section = {
  name: 'cluster',
  title: 'a 3-server cluster: turns on a 1-replica and a 3-replica stream (raw and sessiond, in alternation), nats-server CPU per turn, one turn alone, the leader failover gap',
  async run(ctx) {
    const S = 'cluster';
    say(S, `starting a 3-server cluster (nats-server ${natsServerVersion()})`);
    const c = await startNatsCluster({ extraUsers: [BENCH_USER], partitionable: false });
    const releaseCluster = onCleanup('nats cluster', () => c.dispose());
    let nc: NatsConnection | undefined;
    try {
      nc = await connect({ servers: c.urls, ...BENCH_USER, name: 'bench-cluster-raw' });
      const jsm = await jetstreamManager(nc);
      const js = jetstream(nc);
      const data = typicalMessage(ctx);
      const [raw1, raw3] = [await rawStream(c, jsm, 1), await rawStream(c, jsm, 3)];
      // enough turns per pass that /proc's CPU ticks (10 ms) resolve the servers' CPU per turn
      const turns = ctx.sizes.natsTurnRounds * CONCURRENCY * 6;
      const best: Record<string, Pass> = {};
      const keep = (key: string) => (p: Pass) => {
        const b = best[key];
        if (!b || p.count / p.ms > b.count / b.ms) best[key] = p;
        return p;
      };
      const [pRaw1, pRaw3, pOurs1, pOurs3] = await interleaved(ctx.sizes.passes, [
        (i) => rawTurns(c, js, raw1, 1, data, turns * 2, `p${i}`).then(keep('raw1')),
        (i) => rawTurns(c, js, raw3, 3, data, turns * 2, `p${i}`).then(keep('raw3')),
        (i) => sessiondTurns(ctx, c, jsm, 1, turns, `p${i}`).then(keep('ours1')),
        (i) => sessiondTurns(ctx, c, jsm, 3, turns, `p${i}`).then(keep('ours3')),
      ]);
      const perTurn = (p: Pass, cpu: 'leaderCpu' | 'allCpu') => p[cpu] / p.count;
      const evs = (p: Pass) => `${(p.events / p.count).toFixed(1)} events (${fmt(Math.round(p.bytes! / p.count))} stream bytes) per turn, ${fmt(Math.round((p.events * 1000) / p.ms))} events/s`;
      ctx.results.add({ key: 'cluster.raw.r1', section: S, figure: `raw JetStream turn on the cluster, R1 (${APPENDS_PER_TURN} OCC publishes in sequence, ${CONCURRENCY} at once)`, unit: 'turns/s', value: pRaw1!.best, note: spread(pRaw1!) });
      ctx.results.add({
        key: 'cluster.raw.r3', section: S, figure: `raw JetStream turn on the cluster, R3`, unit: 'turns/s', value: pRaw3!.best,
        raw: { label: 'the raw turn on R1', value: pRaw1!.best, unit: 'turns/s' }, note: spread(pRaw3!),
      });
      ctx.results.add({
        key: 'cluster.turns.r1', section: S, figure: `sessiond turns on the cluster, R1 (engine, echo, ${CONCURRENCY} sessions)`, unit: 'turns/s', value: pOurs1!.best,
        raw: { label: 'the raw turn on R1', value: pRaw1!.best, unit: 'turns/s' }, note: `${evs(best.ours1!)}; ${spread(pOurs1!)}`,
      });
      ctx.results.add({
        key: 'cluster.turns.r3', section: S, figure: 'sessiond turns on the cluster, R3', unit: 'turns/s', value: pOurs3!.best,
        raw: { label: 'sessiond turns on R1', value: pOurs1!.best, unit: 'turns/s' }, note: `${evs(best.ours3!)}; ${spread(pOurs3!)}`,
      });
      ctx.results.add({
        key: 'cluster.turns.r3.raw', section: S, figure: 'sessiond turns on the cluster, R3, vs the raw turn on R3', unit: 'turns/s', value: pOurs3!.best,
        raw: { label: 'the raw turn on R3', value: pRaw3!.best, unit: 'turns/s' },
      });
      for (const [key, label] of [['ours1', 'R1'], ['ours3', 'R3'], ['raw1', 'R1 raw'], ['raw3', 'R3 raw']] as const) {
        const p = best[key]!;
        ctx.results.add({
          key: `cluster.server.cpu.${key}`, section: S, figure: `nats-server CPU per turn, stream leader (${label})`, unit: 'ms', value: perTurn(p, 'leaderCpu'),
          ...(key === 'ours3' ? { raw: { label: 'the same on R1', value: perTurn(best.ours1!, 'leaderCpu'), unit: 'ms' } } : {}),
          note: `all three servers together ${perTurn(p, 'allCpu').toFixed(3)} ms per turn; the best pass (${fmt(Math.round((p.count * 1000) / p.ms))} turns/s)`,
        });
      }
      for (const [key, label] of [['ours1', 'R1'], ['ours3', 'R3']] as const) {
        const p = best[key]!;
        ctx.results.add({
          key: `cluster.worker.cpu.${key}`, section: S, figure: `sessiond worker CPU per turn (engine and its log, ${label})`, unit: 'ms', value: p.workerCpu! / p.count,
          raw: { label: 'the stream leader\'s CPU per turn', value: perTurn(p, 'leaderCpu'), unit: 'ms' },
          note: 'process.cpuUsage over the best pass; the ratio is how many worker cores one leader core keeps up with',
        });
      }
      const n = ctx.sizes.latencyTurns;
      const alone1 = await aloneP50(ctx, c, jsm, 1, n);
      const alone3 = await aloneP50(ctx, c, jsm, 3, n);
      ctx.results.add({ key: 'cluster.alone.r1', section: S, figure: 'one sessiond turn alone on the cluster, p50 (R1)', unit: 'ms', value: alone1, note: `${n} turns of one session` });
      ctx.results.add({
        key: 'cluster.alone.r3', section: S, figure: 'one sessiond turn alone on the cluster, p50 (R3)', unit: 'ms', value: alone3,
        raw: { label: 'the same on R1', value: alone1, unit: 'ms' }, note: `${n} turns of one session`,
      });
      const f = await failoverGap(c, jsm);
      ctx.results.add({
        key: 'cluster.failover', section: S, figure: 'longest wait for an acknowledged append across a SIGKILL of the R3 leader', unit: 'ms', value: f.gapMs,
        note: `8 sessions appending; ${f.leader} killed, ${f.next} elected; appends resent by JetStreamEventLog through the election`,
      });
      await jsm.streams.delete(STREAM_NAME).catch(() => undefined);
    } finally {
      await nc?.close();
      releaseCluster();
      await c.dispose();
    }
  },
};

/** Publishes one message on each of subjects [from, to) of `prefix`, `window` at once. */
async function fillSubjects(js: JetStreamClient, prefix: string, from: number, to: number, data: Uint8Array): Promise<void> {
  const window = 512;
  let next = from;
  const tick = ticker(2000);
  await Promise.all(Array.from({ length: window }, async () => {
    while (next < to) {
      const i = next++;
      await js.publish(`${prefix}.ses_${i}`, data);
      tick(() => say('scale', `${fmt(i - from)}/${fmt(to - from)} subjects`));
    }
  }));
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
          key: `scale.rss.${level}`, section: S, figure: `nats-server RSS holding ${fmt(level)} session subjects (after a restart)`, unit: 'MB', value: rssRestarted / MB,
          note: `${slope.toFixed(0)} bytes per subject from the previous level; ${(rssLoaded / MB).toFixed(1)} MB right after writing them; empty server ${(baseline / MB).toFixed(1)} MB; written at ${fmt(Math.round(((level - written) * 1000) / fillMs))} subjects/s`,
        });
        ctx.results.add({
          key: `scale.bytes.${level}`, section: S, figure: `stream bytes per session subject at ${fmt(level)} (one ${data.byteLength}-byte append each)`, unit: 'bytes', value: info.state.bytes / level,
          note: `store on disk ${(disk / MB).toFixed(1)} MB (${(disk / level).toFixed(0)} bytes per subject); ${fmt(info.state.messages)} messages, ${fmt(info.state.num_subjects ?? level)} subjects`,
        });
        ctx.results.add({ key: `scale.restart.${level}`, section: S, figure: `nats-server restart holding ${fmt(level)} session subjects (SIGTERM to healthy)`, unit: 'ms', value: restartMs });
      }
    } finally {
      await nc?.close().catch(() => undefined);
      releaseServer();
      await server.dispose();
    }
  },
};
