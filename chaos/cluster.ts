/**
 * The fault suite's NATS backend on a 3-server cluster (`npm run chaos -- --backend nats --cluster 3`):
 * src/testing/nats-cluster.ts's servers (routes through proxies it can cut), the events stream
 * created with 3 replicas by `sessiond setup --replicas 3` as the admin user, and each worker
 * connected to all three servers through proxies of its own (so one worker can be cut off alone;
 * the servers do not advertise their direct URLs, which a worker would otherwise reconnect to).
 *
 * Its nemeses, one at a time, drawn from the run's seeded PRNG: the stream leader SIGKILLed and
 * restarted; a follower SIGKILLed and restarted (both with their stores); a server isolated from the
 * other two and healed; the leader SIGSTOPped until the other two have elected a new one (past the
 * election timeout) and then SIGCONTed; and, as on one server, one worker cut off for a while. Each
 * says what it did and, once it has played out, how long the election took.
 */
import { spawn } from 'node:child_process';
import type { Backend, Worker } from './backend.ts';
import { readStream } from './backend.ts';
import { startProxy, type TcpProxy } from '../src/testing/tcp-proxy.ts';
import { SessiondClient } from '../src/client/client.ts';
import { connectNats } from '../src/nats/connection.ts';
import { STREAM_NAME } from '../src/nats/subjects.ts';
import {
  REPLICATED_FENCING_SINCE,
  fencesReplicatedStreams,
  natsServerVersion,
  startNatsCluster,
  type NatsCluster,
  type NatsClusterNode,
} from '../src/testing/nats-cluster.ts';
import { ADMIN, CLIENT, NATS_SERVER_BIN, workerNatsFlags } from '../src/testing/nats-server.ts';
import { join } from 'node:path';
import { clientDecisions } from './decisions.ts';

export const CLUSTER_REPLICAS = 3;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs a command to its end without blocking this process (whose event loop carries the cluster's routes, through the proxies). */
function run(cmd: string, args: string[]): Promise<{ status: number | null; out: string }> {
  return new Promise((done) => {
    const child = spawn(cmd, args, { env: { ...process.env, FORCE_COLOR: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (status) => done({ status, out }));
  });
}

/** `sessiond setup --replicas 3` as the admin user, again while the cluster's meta leader is not ready (at most `timeoutMs`). */
async function setupStream(bin: string, cluster: NatsCluster, timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await run(process.execPath, [
      bin,
      'setup',
      '--nats',
      cluster.url,
      '--nats-user',
      ADMIN.user,
      '--nats-pass',
      ADMIN.pass,
      '--replicas',
      String(CLUSTER_REPLICAS),
    ]);
    if (r.status === 0) return r.out.trim();
    if (Date.now() > deadline) throw new Error(`sessiond setup --replicas ${CLUSTER_REPLICAS} kept failing: ${r.out}`);
  }
}

/** Why this machine's nats-server cannot run the cluster backend, or undefined when it can. */
export function clusterServerProblem(): string | undefined {
  const version = natsServerVersion();
  return fencesReplicatedStreams(version)
    ? undefined
    : `nats-server ${version} (${NATS_SERVER_BIN}) does not fence appends on a replicated stream (fixed by ${REPLICATED_FENCING_SINCE}): ` +
        'a 3-replica stream there lets two workers own a session. Point SESSIOND_NATS_SERVER at a newer one (npm test builds .tools/bin/nats-server).';
}

export async function clusterBackend(dir: string, nWorkers: number, bin: string, size: number): Promise<Backend> {
  const cluster = await startNatsCluster({ size, advertise: false });
  try {
    return await onCluster(cluster, dir, nWorkers, bin);
  } catch (err) {
    await cluster.dispose().catch(() => undefined);
    throw err;
  }
}

async function onCluster(cluster: NatsCluster, dir: string, nWorkers: number, bin: string): Promise<Backend> {
  const setup = await setupStream(bin, cluster);
  await cluster.waitStreamCurrent(STREAM_NAME, { replicas: CLUSTER_REPLICAS, timeoutMs: 60_000 });
  // proxies[i][j]: worker i's way to server j
  const proxies: TcpProxy[][] = [];
  for (let i = 0; i < nWorkers; i++) proxies.push(await Promise.all(cluster.nodes.map((n) => startProxy(n.port))));
  const client = await SessiondClient.connect({ connection: { servers: cluster.urls, ...CLIENT, reconnectWaitMs: 100 }, requestTimeoutMs: 3_000 });
  const admin = await cluster.adminConnection();
  const raw = await connectNats({ servers: cluster.urls, ...CLIENT, reconnectWaitMs: 100 });
  /** The nemesis playing out, if any: one at a time. */
  let nemesis: Promise<void> | undefined;
  const leaderOrNone = () => cluster.streamLeader(STREAM_NAME, 10_000).catch(() => undefined);
  /** Waits for a leader other than `old` (an election), at most `timeoutMs`; says who and how long after `what`. */
  const elected = async (old: NatsClusterNode, since: number, what: string, timeoutMs = 30_000): Promise<string> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const info = await cluster.streamInfo(STREAM_NAME);
      const leader = info?.cluster?.leader;
      if (leader && leader !== old.name) return `${leader} elected ${((Date.now() - since) / 1000).toFixed(1)} s after ${what}`;
      if (Date.now() > deadline) return `no other leader within ${(timeoutMs / 1000).toFixed(1)} s of ${what}`;
      await sleep(100);
    }
  };
  const play = (run: () => Promise<void>, say: (line: string) => void) => {
    nemesis = run()
      .catch((err: unknown) => say(`nemesis failed: ${String(err)}`))
      .finally(() => {
        nemesis = undefined;
      });
  };
  const killAndRestart = (victim: NatsClusterNode, role: string, afterMs: number, say: (line: string) => void) =>
    play(async () => {
      const at = Date.now();
      await victim.kill();
      const election = role === 'leader' ? `; ${await elected(victim, at, 'the SIGKILL')}` : '';
      await sleep(Math.max(0, afterMs - (Date.now() - at)));
      await victim.start();
      say(`${victim.name} (${role}) back ${((Date.now() - at) / 1000).toFixed(1)} s after its SIGKILL${election}`);
    }, say);

  return {
    name: 'nats',
    label: `nats cluster of ${cluster.nodes.length}, R${CLUSTER_REPLICAS} (${setup.split('\n')[0]})`,
    workerArgs: (i) => [...workerNatsFlags(proxies[i]!.map((p) => `nats://127.0.0.1:${p.port}`).join(',')), '--db', join(dir, `w${i + 1}.db`)],
    admit: async (session, id, prompt, delivery) => {
      await client.admit(session, { id, prompt, delivery });
    },
    cancel: async (session) => {
      await client.cancel(session, 'chaos');
    },
    ...clientDecisions(client),
    rawRequest: (subject, body) => raw.request(subject, body, { timeout: 3_000 }).then((m) => m.data),
    readLog: () => readStream(admin),
    fault: async (random, workers: Worker[], say) => {
      const r = random();
      if (nemesis === undefined && r < 0.8) {
        const leader = await leaderOrNone();
        if (!leader) return undefined;
        const followers = cluster.nodes.filter((n) => n !== leader && n.running);
        if (r < 0.2) {
          const afterMs = 1_000 + Math.floor(random() * 3_000);
          killAndRestart(leader, 'leader', afterMs, say);
          return {
            kind: 'leader SIGKILL+restart',
            detail: `SIGKILL the stream leader ${leader.name}; restart ${(afterMs / 1000).toFixed(1)} s later, not before another is elected`,
          };
        }
        if (r < 0.4 && followers.length > 0) {
          const victim = followers[Math.floor(random() * followers.length)]!;
          const afterMs = 1_000 + Math.floor(random() * 3_000);
          killAndRestart(victim, 'follower', afterMs, say);
          return { kind: 'follower SIGKILL+restart', detail: `SIGKILL the follower ${victim.name}; restart in ${(afterMs / 1000).toFixed(1)} s` };
        }
        if (r < 0.6) {
          const victim = cluster.nodes[Math.floor(random() * cluster.nodes.length)]!;
          const forMs = 2_000 + Math.floor(random() * 6_000);
          const role = victim === leader ? 'the leader' : 'a follower';
          play(async () => {
            const at = Date.now();
            cluster.isolate(victim);
            const election = victim === leader ? `; ${await elected(victim, at, 'the cut', forMs)}` : '';
            await sleep(Math.max(0, forMs - (Date.now() - at)));
            cluster.heal(victim);
            say(`${victim.name} healed after ${((Date.now() - at) / 1000).toFixed(1)} s cut off${election}`);
          }, say);
          return { kind: 'server isolated+healed', detail: `isolate ${victim.name} (${role}) from the other servers for ${(forMs / 1000).toFixed(1)} s` };
        }
        play(async () => {
          const at = Date.now();
          leader.pause();
          // past the election timeout: until the others have elected another leader (bounded)
          const election = await elected(leader, at, 'the SIGSTOP');
          await sleep(Math.floor(random() * 1_000));
          leader.resume();
          say(`${leader.name} SIGCONTed after ${((Date.now() - at) / 1000).toFixed(1)} s stopped; ${election}`);
        }, say);
        return { kind: 'leader SIGSTOP past the election', detail: `SIGSTOP the stream leader ${leader.name} until another is elected, then SIGCONT` };
      }
      // one worker cut off from every server, as on one server
      const running = workers.filter((w) => w.state === 'running');
      const i = workers.indexOf(running[Math.floor(random() * running.length)]!);
      if (i < 0 || proxies[i]!.some((p) => p.cut)) return undefined;
      for (const p of proxies[i]!) p.partition();
      const forMs = 1_000 + Math.floor(random() * 3_000);
      setTimeout(() => {
        for (const p of proxies[i]!) p.heal();
      }, forMs);
      return { kind: 'partition', detail: `partition of ${workers[i]!.name} for ${(forMs / 1000).toFixed(1)} s` };
    },
    heal: async () => {
      await nemesis;
      for (const row of proxies) for (const p of row) p.heal();
      for (const n of cluster.nodes) {
        cluster.heal(n);
        n.resume();
      }
      await cluster.startAll();
      await cluster.waitStreamCurrent(STREAM_NAME, { replicas: CLUSTER_REPLICAS, timeoutMs: 60_000 });
    },
    close: async () => {
      await nemesis;
      await client.close();
      await raw.close();
      for (const row of proxies) for (const p of row) await p.close();
      await cluster.dispose();
    },
  };
}
