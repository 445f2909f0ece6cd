// What an acknowledged append survives, shown with appends in flight at the moment of the crash:
// 16 sessions append as fast as they can through JetStreamEventLog (the worker user), servers are
// SIGKILLed (no clean shutdown: what the process had not handed to the kernel is gone), restarted,
// and the appenders go on. Each test counts the acknowledged appends that are not in the log where
// they were acknowledged (lost) and the events stored twice (doubled), and prints them; appends
// whose acknowledgement was lost are retried with the same message id and land once.
//
// Each fault runs with nats-server's default sync (`sync_interval: 2m`, written explicitly: the
// shipped nats-cluster.conf says `always`) and with `sync_interval: always` (fsync before every
// acknowledgement); each test first checks from /varz that its servers run with the sync it names.
// 1. one nats-server, 1 replica: SIGKILLed under load, restarted;
// 2. the 3-server cluster, 3 replicas: the stream's leader SIGKILLed, appends go on on the other
//    two, it comes back with an empty store (the machine lost with its disk);
// 3. the same, a follower SIGKILLed and restarted with its store;
// 4. the same, all three SIGKILLed at once right after a burst of acknowledged appends (16 in
//    flight), all started again.
//
// Every test asserts nothing acknowledged lost or doubled, with either sync: measured so (see
// docs/scaling.md), and it follows from how nats-server writes. SIGKILL ends the process, not the
// kernel: whatever nats-server handed to write(2) is in the page cache and reaches the disk anyway,
// and nats-server writes an R1 stream's message, and a replicated stream's Raft log entry (on the
// leader and on the follower that makes the majority), before the append is acknowledged, with
// either setting. So a SIGKILL cannot tell the two settings apart; only a power loss or a kernel
// crash can (it drops the page cache: with the default sync, up to the last 2 minutes of
// acknowledged appends on each machine it hits). These tests do not simulate that: on one machine
// it would take a VM to cut, or a file system that forgets unsynced writes (LazyFS, as Jepsen used
// for nats-server#7564), and deleting files by hand would only show what the test chose to delete.
// docs/scaling.md ("What an acknowledged append survives") has what follows from fsync.
//
// In the replicated tests each session has one appender: they show what replication keeps, not what
// fences (fencing.test.ts). Waits are on counts of acknowledged appends and on the servers' state,
// with deadlines. The sync settings need nats-server 2.10 or newer (2.9 refuses `sync_interval`).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { STREAM_NAME } from '../../src/nats/subjects.ts';
import { admitted } from '../../src/testing/event-log-contract.ts';
import { fencesReplicatedStreams, startNatsCluster, withJetStreamSync, type JetStreamSync, type NatsCluster } from '../../src/testing/nats-cluster.ts';
import { eventStreamConfig } from '../../src/nats/stream.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { jetstreamManager } from '@nats-io/jetstream';
import { ADMIN, REPO_NATS_CONF, WORKER, startNatsServer } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';
import { setupStream } from './helpers.ts';

const SESSIONS = 16;

interface Appenders {
  /** Acknowledged appends: event id -> [session, seq, position]. */
  acked: Map<string, [string, number, number]>;
  failed: string[];
  stop(): Promise<void>;
}

/** 16 sessions appending one event at a time, each as soon as the previous one is acknowledged. */
function startAppenders(log: JetStreamEventLog, label: string): Appenders {
  const acked = new Map<string, [string, number, number]>();
  const failed: string[] = [];
  let stopping = false;
  const loops = Array.from({ length: SESSIONS }, async (_, i) => {
    const session = `ses_${label}_${i}`;
    let seq = 0;
    while (!stopping) {
      try {
        const [e] = await log.append(session, seq, [admitted(`append ${seq + 1} of ${session}`)]);
        acked.set(e!.id, [session, e!.seq, e!.position!]);
        seq = e!.seq;
      } catch (err) {
        // an append that outlived its retries: its outcome is unknown, the session is reloaded
        failed.push(String(err));
        seq = await log.lastSeq(session).catch(() => seq);
      }
    }
  });
  return {
    acked,
    failed,
    stop: async () => {
      stopping = true;
      await Promise.all(loops);
    },
  };
}

interface Tally {
  /** Acknowledged appends not in the log where they were acknowledged. */
  lost: string[];
  /** Event ids stored more than once. */
  doubled: string[];
  /** Sessions whose stored sequence is not 1..n. */
  broken: string[];
}

/** What of the acknowledged appends is in `events`: lost, doubled, and sessions with a gap or repeat. */
function tally(events: SessionEvent[], a: Appenders): Tally {
  const byId = new Map<string, SessionEvent>();
  const doubled: string[] = [];
  for (const e of events) {
    if (byId.has(e.id)) doubled.push(e.id);
    byId.set(e.id, e);
  }
  const lost = [...a.acked]
    .filter(([id, [session, seq, position]]) => {
      const e = byId.get(id);
      return !e || e.sessionId !== session || e.seq !== seq || e.position !== position;
    })
    .map(([id, [session, seq]]) => `${session}#${seq} ${id}`);
  const seqs = new Map<string, number[]>();
  for (const e of events) seqs.set(e.sessionId, [...(seqs.get(e.sessionId) ?? []), e.seq]);
  const broken = [...seqs].filter(([, list]) => list.some((v, i) => v !== i + 1)).map(([session, list]) => `${session}: ${list.join(',')}`);
  return { lost, doubled, broken };
}

/** Every acknowledged append is in `events` where it was acknowledged; no id twice; seqs gap-free. */
function assertDurable(t: Tally, a: Appenders, what: string): void {
  assert.equal(t.doubled, [], `${what}: no event stored twice`);
  assert.equal(t.lost, [], `${what}: every one of the ${a.acked.size} acknowledged appends is in the log where it was acknowledged`);
  assert.equal(t.broken, [], `${what}: every session's sequence has no gap or repeat`);
}

const counts = (t: Tally, a: Appenders, events: SessionEvent[], log: JetStreamEventLog) =>
  `lost ${t.lost.length}, doubled ${t.doubled.length} of ${a.acked.size} acknowledged; ${events.length} stored, ` +
  `${log.stats.retries} requests resent, ${log.stats.retriesRecognised} resent appends recognised as already stored, ${a.failed.length} gave up` +
  `${a.failed.length ? ` (the first: ${a.failed[0]!.slice(0, 300)})` : ''}`;

const syncName = (sync: JetStreamSync) => (sync === '2m' ? 'default sync (every 2 min)' : `sync_interval: ${sync}`);

/** Whether a server runs with `sync_interval: always`, from /varz. */
async function syncsAlways(monitorPort: number): Promise<boolean> {
  const varz = (await (await fetch(`http://127.0.0.1:${monitorPort}/varz`)).json()) as { jetstream?: { config?: { sync_always?: boolean } } };
  return varz.jetstream?.config?.sync_always === true;
}

/** The events stream with 3 replicas (sessiond setup, or directly as the admin on a server that does not fence them). */
async function replicatedStream(cluster: NatsCluster): Promise<void> {
  if (fencesReplicatedStreams()) assert.match(await setupStream(cluster, 3), '3 replicas');
  else {
    // sessiond refuses 3 replicas on this server (racing appends are not fenced: fencing.test.ts);
    // these tests have one appender per session, where fencing plays no part, and measure what the
    // server's replication keeps: the admin creates the stream with sessiond's config directly
    const admin = await connectNats({ servers: cluster.urls, ...ADMIN });
    await (await jetstreamManager(admin)).streams.add(eventStreamConfig({ replicas: 3 }));
    await admin.close();
  }
  await cluster.waitStreamCurrent(STREAM_NAME);
}

/** A worker-user log on every server, without verifying the stream (a worker would refuse R3 on a server that does not fence). */
const clusterLog = (cluster: NatsCluster) =>
  JetStreamEventLog.open({ connection: { servers: cluster.urls, ...WORKER, reconnectWaitMs: 50 }, ensureStream: false });

const s = suite('durability: what an acknowledged append survives, under SIGKILLs of one server and of all');

for (const sync of ['2m', 'always'] as const) {
  s(`one nats-server, 1 replica, ${syncName(sync)}: SIGKILLed under load and restarted, nothing acknowledged lost or doubled`, async () => {
    const t0 = Date.now();
    const dir = tempDir('sessiond-durability-');
    const config = dir.file('nats.conf');
    writeFileSync(config, withJetStreamSync(readFileSync(REPO_NATS_CONF, 'utf8'), sync));
    const server = await startNatsServer({ config });
    const log = await JetStreamEventLog.open({ connection: { servers: server.url, ...WORKER, reconnectWaitMs: 50 } });
    let appenders: Appenders | undefined;
    try {
      assert.is(await syncsAlways(server.monitorPort), sync === 'always', `the server runs with ${syncName(sync)}`);
      appenders = startAppenders(log, 'one');
      await waitFor(() => appenders!.acked.size >= 400, { timeoutMs: 30_000, what: '400 acknowledged appends' });
      const atKill = appenders.acked.size;
      await server.kill();
      await server.restart();
      await waitFor(() => appenders!.acked.size >= atKill + 400, { timeoutMs: 60_000, what: '400 more acknowledged appends after the restart' });
      await appenders.stop();
      const events = await log.readAll();
      const t = tally(events, appenders);
      process.stdout.write(
        `  [durability one server, ${syncName(sync)}] ${((Date.now() - t0) / 1000).toFixed(1)} s; SIGKILL after ${atKill} acknowledged appends (${SESSIONS} in flight): ${counts(t, appenders, events, log)}\n`,
      );
      assertDurable(t, appenders, `one server, ${syncName(sync)}`);
    } finally {
      await appenders?.stop();
      await log.close();
      await server.dispose();
      dir.remove();
    }
  });
}

/**
 * The frame of the replicated tests: a cluster running `sync` (checked from /varz), the events
 * stream with 3 replicas, the appenders until `before` appends are acknowledged, then `fault` (it
 * returns what happened, in words), 400 more acknowledged appends, and the count of what was lost
 * or doubled, printed and asserted to be nothing.
 */
async function replicatedFault(
  sync: JetStreamSync,
  what: string,
  before: number,
  fault: (w: { cluster: NatsCluster; appenders: Appenders; atKill: number }) => Promise<string>,
): Promise<void> {
  const t0 = Date.now();
  const cluster = await startNatsCluster({ jetstream: { syncInterval: sync } });
  let log: JetStreamEventLog | undefined;
  let appenders: Appenders | undefined;
  try {
    for (const n of cluster.nodes) assert.is(await syncsAlways(n.monitorPort), sync === 'always', `${n.name} runs with ${syncName(sync)}`);
    await replicatedStream(cluster);
    log = await clusterLog(cluster);
    appenders = startAppenders(log, what.split(' ')[0]!);
    await waitFor(() => appenders!.acked.size >= before, { timeoutMs: 60_000, what: `${before} acknowledged appends` });
    const story = await fault({ cluster, appenders, atKill: appenders.acked.size });
    const atRestart = appenders.acked.size;
    await waitFor(() => appenders!.acked.size >= atRestart + 400, { timeoutMs: 60_000, what: '400 more acknowledged appends after the restart' });
    await appenders.stop();
    const events = await log.readAll();
    const t = tally(events, appenders);
    process.stdout.write(
      `  [durability R3 ${what}, ${syncName(sync)}] ${((Date.now() - t0) / 1000).toFixed(1)} s; ${story}: ${counts(t, appenders, events, log)}` +
        `${t.lost.length ? `; lost: ${t.lost.slice(0, 8).join(', ')}` : ''}\n`,
    );
    assertDurable(t, appenders, `cluster R3, ${syncName(sync)}, ${what}`);
  } finally {
    await appenders?.stop();
    await log?.close();
    await cluster.dispose();
  }
}

for (const sync of ['2m', 'always'] as const) {
  s(
    `the 3-server cluster, 3 replicas, ${syncName(sync)}: the leader SIGKILLed under load, appends go on, it comes back empty and is rebuilt; nothing acknowledged lost or doubled`,
    () =>
      replicatedFault(sync, 'leader killed', 400, async ({ cluster, appenders, atKill }) => {
        const leader = await cluster.streamLeader(STREAM_NAME);
        await leader.kill();
        const killedAt = Date.now();
        // the others elect a leader and take appends while the victim is down; it comes back empty
        const next = await cluster.streamLeader(STREAM_NAME);
        assert.ok(next !== leader, 'a surviving server leads the stream');
        const electedMs = Date.now() - killedAt;
        await waitFor(() => appenders.acked.size >= atKill + 200, { timeoutMs: 60_000, what: '200 appends acknowledged while the leader is down' });
        const whileDown = appenders.acked.size - atKill;
        leader.wipe();
        await leader.start();
        const info = await cluster.waitStreamCurrent(STREAM_NAME);
        return (
          `SIGKILLed the leader ${leader.name} after ${atKill} acknowledged appends, ${next.name} elected ${(electedMs / 1000).toFixed(1)} s later, ` +
          `${whileDown} acknowledged while ${leader.name} was down, which came back from an empty store (replicas then ${(info.cluster?.replicas ?? []).map((r) => `${r.name}${r.current ? ' current' : ' behind'}`).join(', ')})`
        );
      }),
  );

  s(
    `the 3-server cluster, 3 replicas, ${syncName(sync)}: a follower SIGKILLed under load, appends go on, it restarts with its store and catches up; nothing acknowledged lost or doubled`,
    () =>
      replicatedFault(sync, 'follower killed', 400, async ({ cluster, appenders, atKill }) => {
        const leader = await cluster.streamLeader(STREAM_NAME);
        const follower = cluster.nodes.find((n) => n !== leader)!;
        await follower.kill();
        await waitFor(() => appenders.acked.size >= atKill + 400, { timeoutMs: 60_000, what: '400 appends acknowledged while a follower is down' });
        const whileDown = appenders.acked.size - atKill;
        const restartedAt = Date.now();
        await follower.start();
        const info = await cluster.waitStreamCurrent(STREAM_NAME);
        return (
          `SIGKILLed the follower ${follower.name} after ${atKill} acknowledged appends (leader ${leader.name}, then ${info.cluster?.leader}), ` +
          `${whileDown} acknowledged while it was down, restarted with its store and current ${((Date.now() - restartedAt) / 1000).toFixed(1)} s later`
        );
      }),
  );

  s(
    `the 3-server cluster, 3 replicas, ${syncName(sync)}: all three SIGKILLed at once right after a burst of acknowledged appends, started again; nothing acknowledged lost or doubled`,
    () =>
      replicatedFault(sync, 'all killed', 600, async ({ cluster, appenders, atKill }) => {
        await cluster.killAll();
        const killedAt = Date.now();
        // acknowledgements already on their way when the servers died still arrive
        const afterKill = appenders.acked.size - atKill;
        await cluster.startAll();
        await cluster.waitStreamCurrent(STREAM_NAME, { timeoutMs: 60_000 });
        return (
          `all three SIGKILLed after ${atKill} acknowledged appends (${afterKill} more acknowledgements arrived during the kill), ` +
          `stream current again ${((Date.now() - killedAt) / 1000).toFixed(1)} s after it`
        );
      }),
  );
}

s.run();
