/**
 * A real 3-server NATS cluster for tests, routes through proxies so a node can be partitioned
 * (`isolate`, `heal`), besides killed, paused and restarted. Why: docs/testing.md#the-nats-harnesses.
 *
 *   const cluster = await startNatsCluster();   // cluster.urls, cluster.url ("u1,u2,u3")
 */
import { fencesReplicated } from '../nats/stream.ts';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jetstreamManager, type JetStreamManager, type StreamInfo } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { startProxy, type TcpProxy } from './tcp-proxy.ts';
import { connectNats } from '../nats/connection.ts';
import { ADMIN, NATS_SERVER_BIN, installExitHook, missingServer, running, stablePort, tempDirs } from './nats-server.ts';

export const REPO_NATS_CLUSTER_CONF = resolve(fileURLToPath(new URL('../../nats-cluster.conf', import.meta.url)));
export const CLUSTER_NAME = 'sessiond';

export { REPLICATED_FENCING_SINCE, versionAtLeast } from '../nats/stream.ts';

/** `nats-server --version` of the harness's binary, e.g. `2.9.10`. */
export function natsServerVersion(bin = NATS_SERVER_BIN): string {
  const out = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  const m = /v?(\d+\.\d+\.\d+)/.exec(`${out.stdout ?? ''}${out.stderr ?? ''}`);
  if (!m) throw new Error(`could not read the version of ${bin}: ${out.stdout}${out.stderr}`);
  return m[1]!;
}

/** Whether this nats-server fences appends on a replicated stream (what sessiond requires for replicas: src/nats/stream.ts). */
export function fencesReplicatedStreams(version = natsServerVersion()): boolean {
  return fencesReplicated(version);
}

const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 5_000;
const LOG_LINES = 80;

export interface NatsClusterNode {
  /** 0, 1, 2 */
  readonly index: number;
  /** The server name (`sessiond-n1` ...), as stream info reports leaders and replicas. */
  readonly name: string;
  readonly url: string;
  readonly port: number;
  readonly monitorPort: number;
  readonly clusterPort: number;
  readonly storeDir: string;
  readonly pid: number | undefined;
  readonly running: boolean;
  /** The last lines the server logged, for failure messages. */
  log(): string;
  /** Starts it (same ports and store) and waits until it accepts connections; `healthy` (default true) also waits for /healthz. */
  start(options?: { healthy?: boolean }): Promise<void>;
  /** SIGKILL, like a crash. The store is kept. */
  kill(): Promise<void>;
  /** SIGSTOP: the process freezes (a stall: GC pause, VM freeze), its sockets stay open; `resume` sends SIGCONT. */
  pause(): void;
  resume(): void;
  /** Stopped by `pause` and not resumed yet. */
  readonly paused: boolean;
  /** SIGTERM, then SIGKILL if it has not exited within a deadline. The store is kept. */
  stop(): Promise<void>;
  /** Deletes the store (the node must be stopped): a machine lost with its disk. */
  wipe(): void;
  /** /healthz answers 200. */
  healthy(): Promise<boolean>;
  /** GET a monitoring endpoint (e.g. `/connz?subs=1`), parsed JSON; rejects when the node is down. */
  monitor<T = unknown>(path: string): Promise<T>;
}

export interface NatsCluster {
  readonly nodes: readonly NatsClusterNode[];
  /** Every node's client URL. */
  readonly urls: string[];
  /** The client URLs comma-separated, as `sessiond --nats` takes them. */
  readonly url: string;
  /** Drops every route connection to and from `node` and refuses new ones until `heal`. */
  isolate(node: NatsClusterNode): void;
  heal(node: NatsClusterNode): void;
  isolated(node: NatsClusterNode): boolean;
  /** An admin-user connection to a running node that is not cut off (reconnects by itself; closed by dispose). */
  adminConnection(): Promise<NatsConnection>;
  /** A JetStream manager on `adminConnection()`. */
  admin(): Promise<JetStreamManager>;
  /** The stream's info, or undefined while no leader answers (elections, restarts). */
  streamInfo(stream: string): Promise<StreamInfo | undefined>;
  /** The node leading the stream, once one does (polls until `timeoutMs`). */
  streamLeader(stream: string, timeoutMs?: number): Promise<NatsClusterNode>;
  /**
   * Waits until the stream has a leader and every replica is current (caught up), on the nodes
   * running; `replicas` (default 3) replicas in all.
   */
  waitStreamCurrent(stream: string, options?: { timeoutMs?: number; replicas?: number }): Promise<StreamInfo>;
  /** Asks the stream's leader to step down (another replica is elected) until `node` leads it. */
  moveLeader(stream: string, node: NatsClusterNode, timeoutMs?: number): Promise<void>;
  /** Waits until every running node reports healthy and they agree on a running JetStream meta leader. */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** SIGKILLs every node at once. */
  killAll(): Promise<void>;
  /** Starts every stopped node at once and waits until all are healthy. */
  startAll(): Promise<void>;
  /** Stops everything, closes the admin connection, removes the stores and proxies. */
  dispose(): Promise<void>;
}

function getJson<T>(port: number, path: string, timeoutMs = 2000): Promise<T> {
  return new Promise((done, fail) => {
    const req = httpGet({ host: '127.0.0.1', port, path, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => {
        try {
          done(JSON.parse(body) as T);
        } catch (err) {
          fail(err as Error);
        }
      });
    });
    req.once('error', fail);
    req.once('timeout', () => req.destroy(new Error(`GET ${path} on :${port} timed out`)));
  });
}

function httpStatus(port: number, path: string): Promise<number> {
  return new Promise((done) => {
    const req = httpGet({ host: '127.0.0.1', port, path, timeout: 1000 }, (res) => {
      res.resume();
      done(res.statusCode ?? 0);
    });
    req.once('error', () => done(0));
    req.once('timeout', () => {
      req.destroy();
      done(0);
    });
  });
}

async function poll<T>(what: string, timeoutMs: number, attempt: () => Promise<T | undefined>, describe?: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await attempt().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}.${describe ? `\n${describe()}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A copy of the cluster config and of the nats.conf it includes, side by side in `dir`, with
 * `extraUsers` added to nats.conf's users without permission limits (for benchmarks that measure the
 * raw substrate on their own streams, never for tests of sessiond's users).
 */
function withExtraUsers(config: string, dir: string, extraUsers: readonly { user: string; pass: string }[]): string {
  const text = readFileSync(config, 'utf8');
  const include = /^include\s+(\S+)\s*$/m.exec(text);
  if (!include) throw new Error(`${config} includes no users file to add ${extraUsers.map((u) => u.user).join(', ')} to`);
  const included = include[1]!.replace(/^["']|["']$/g, '');
  const users = readFileSync(resolve(dirname(config), included), 'utf8');
  if (!/users:\s*\[/.test(users)) throw new Error(`${included} has no users list`);
  const added = extraUsers.map((u) => `      { user: ${JSON.stringify(u.user)}, password: ${JSON.stringify(u.pass)} }`).join('\n');
  writeFileSync(
    join(dir, 'nats.conf'),
    users.replace(/users:\s*\[/, (m) => `${m}\n${added}`),
  );
  const copy = join(dir, 'nats-cluster.conf');
  writeFileSync(copy, text.replace(include[0], 'include ./nats.conf'));
  return copy;
}

// ---- JetStream sync (durability): one option, one function ----------------------------------

/**
 * nats-server's `sync_interval` for JetStream's file store: `'always'` fsyncs every write before it
 * is acknowledged (on a replicated stream: the Raft log's write; the stream's own files at snapshots),
 * a duration (`'2m'`, nats-server's default, `'10s'`) fsyncs in the background at that interval.
 */
export type JetStreamSync = 'always' | `${number}${'ms' | 's' | 'm' | 'h'}`;

/**
 * `config`'s text with `sync_interval: <sync>` as the first line of its last top-level `jetstream`
 * block (replacing any sync line already there): the block nats-server applies last. Throws when the
 * text has no jetstream block.
 */
export function withJetStreamSync(config: string, sync: JetStreamSync): string {
  if (!/^(always|\d+(ms|s|m|h))$/.test(sync)) throw new Error(`not a JetStream sync_interval: ${JSON.stringify(sync)}`);
  const blocks = [...config.matchAll(/^jetstream\s*[:=]?\s*\{[^}]*\}/gm)];
  const block = blocks[blocks.length - 1];
  if (!block) throw new Error('the config has no top-level jetstream { } block to set sync_interval in');
  const body = block[0].replace(/^\s*sync(_interval)?\s*[:=]?.*\n/gm, '');
  const synced = body.replace(/\{/, `{\n  sync_interval: ${sync}   # set by withJetStreamSync (src/testing/nats-cluster.ts)`);
  return config.slice(0, block.index) + synced + config.slice(block.index! + block[0].length);
}

/**
 * A copy of the cluster config in `dir` with `sync_interval` set (withJetStreamSync). nats-server
 * resolves an include relative to the including file (an absolute path too), so the included file
 * is copied beside it unless it is there already (withExtraUsers's copy).
 */
function withSyncConfig(config: string, dir: string, sync: JetStreamSync): string {
  const text = withJetStreamSync(readFileSync(config, 'utf8'), sync).replace(/^include\s+(\S+)\s*$/m, (_, file: string) => {
    const included = resolve(dirname(config), file.replace(/^["']|["']$/g, ''));
    const beside = join(dir, basename(included));
    if (included !== beside) writeFileSync(beside, readFileSync(included, 'utf8'));
    return `include ./${basename(included)}`;
  });
  const copy = join(dir, 'nats-cluster.synced.conf');
  writeFileSync(copy, text);
  return copy;
}

// ------------------------------------------------------------------------------------------------

/**
 * Starts a cluster of `size` (default 3) nats-servers from `config` (default the repo's
 * nats-cluster.conf); `extraUsers` are added without permission limits (benchmarks only);
 * `jetstream.syncInterval` sets the servers' `sync_interval` (withJetStreamSync) in the derived config.
 */
export async function startNatsCluster(
  options: {
    size?: number;
    config?: string;
    extraUsers?: readonly { user: string; pass: string }[];
    /**
     * Route through the harness's TCP proxies (default true), so `isolate` can cut a node off. Without
     * them the nodes route to each other directly (for benchmarks: the proxies run in this process and
     * would add its event loop to every replicated write); `isolate` then throws.
     */
    partitionable?: boolean;
    /** JetStream settings written into the derived config: `syncInterval` (default: the config's own, else nats-server's 2 minutes). */
    jetstream?: { syncInterval?: JetStreamSync };
    /**
     * Extra environment of node `index`'s nats-server, e.g. libfaketime's LD_PRELOAD and FAKETIME to
     * skew its clock (which a Go binary ignores: see test/cluster/failover-skew.test.ts).
     */
    env?: (index: number) => NodeJS.ProcessEnv | undefined;
    /**
     * Tell clients the other servers' URLs (default true). With false (`--no_advertise`) a client
     * knows only the URLs it was given: the fault suite gives its workers proxies, which a learnt
     * direct URL would go around.
     */
    advertise?: boolean;
  } = {},
): Promise<NatsCluster> {
  const partitionable = options.partitionable ?? true;
  installExitHook();
  const size = options.size ?? 3;
  if (!existsSync(NATS_SERVER_BIN)) {
    throw new Error(missingServer(NATS_SERVER_BIN));
  }
  const dir = mkdtempSync(join(tmpdir(), 'sessiond-nats-cluster-'));
  tempDirs.add(dir);
  const users = options.extraUsers?.length
    ? withExtraUsers(options.config ?? REPO_NATS_CLUSTER_CONF, dir, options.extraUsers)
    : (options.config ?? REPO_NATS_CLUSTER_CONF);
  const sync = options.jetstream?.syncInterval;
  const config = sync === undefined ? users : withSyncConfig(users, dir, sync);
  const ports = [];
  for (let i = 0; i < size; i++) ports.push({ client: await stablePort(), monitor: await stablePort(), cluster: await stablePort() });
  // nothing listens here: routes learnt by gossip fail instead of going around the proxies
  const nowhere = await stablePort();
  // proxies[i][j]: node i's route to node j
  const proxies: (TcpProxy | undefined)[][] = [];
  for (let i = 0; i < size; i++) {
    proxies.push([]);
    for (let j = 0; j < size; j++) proxies[i]!.push(i === j || !partitionable ? undefined : await startProxy(ports[j]!.cluster));
  }
  const cut = new Set<number>();
  const nodes: NatsClusterNode[] = [];

  for (let i = 0; i < size; i++) {
    const name = `sessiond-n${i + 1}`;
    const { client: port, monitor: monitorPort, cluster: clusterPort } = ports[i]!;
    const storeDir = join(dir, name);
    const routes = partitionable
      ? proxies[i]!.flatMap((p) => (p ? [`nats-route://127.0.0.1:${p.port}`] : [])).join(',')
      : ports.flatMap((p, j) => (j === i ? [] : [`nats-route://127.0.0.1:${p.cluster}`])).join(',');
    const lines: string[] = [];
    let child: ChildProcess | undefined;
    let stopped = false;
    let exited: Promise<void> = Promise.resolve();
    const record = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(line);
      if (lines.length > LOG_LINES) lines.splice(0, lines.length - LOG_LINES);
    };
    const alive = () => child !== undefined && child.exitCode === null && child.signalCode === null;
    const halt = async (signal: 'SIGTERM' | 'SIGKILL') => {
      const proc = child;
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) {
        child = undefined;
        stopped = false;
        return;
      }
      proc.kill(signal);
      // a SIGSTOPped process acts on SIGTERM only once continued
      if (stopped) {
        proc.kill('SIGCONT');
        stopped = false;
      }
      const timer = new Promise<'timeout'>((r) => {
        const t = setTimeout(() => r('timeout'), STOP_TIMEOUT_MS);
        t.unref();
      });
      if ((await Promise.race([exited.then(() => 'exited' as const), timer])) === 'timeout') {
        proc.kill('SIGKILL');
        await exited;
      }
      child = undefined;
    };
    const healthy = async () => alive() && (await httpStatus(monitorPort, '/healthz')) === 200;
    const node = {
      index: i,
      name,
      url: `nats://127.0.0.1:${port}`,
      port,
      monitorPort,
      clusterPort,
      storeDir,
      get pid() {
        return child?.pid;
      },
      get running() {
        return alive();
      },
      get paused() {
        return alive() && stopped;
      },
      pause: () => {
        if (!alive()) throw new Error(`${name} is not running: nothing to pause`);
        child!.kill('SIGSTOP');
        stopped = true;
        lines.push(`---- harness: SIGSTOP ${name}`);
      },
      resume: () => {
        if (!alive() || !stopped) return;
        child!.kill('SIGCONT');
        stopped = false;
        lines.push(`---- harness: SIGCONT ${name}`);
      },
      log: () => lines.join('\n'),
      healthy,
      monitor: <T>(path: string) => getJson<T>(monitorPort, path),
      kill: () => halt('SIGKILL'),
      stop: () => halt('SIGTERM'),
      wipe: () => {
        if (alive()) throw new Error(`${name} is running: stop it before wiping its store`);
        rmSync(storeDir, { recursive: true, force: true });
      },
      start: async (opts: { healthy?: boolean } = {}) => {
        if (alive()) return;
        lines.push(`---- harness: starting ${name}`);
        const proc = spawn(
          NATS_SERVER_BIN,
          [
            '-c',
            config,
            '-n',
            name,
            '-a',
            '127.0.0.1',
            '-p',
            String(port),
            '-m',
            String(monitorPort),
            '--cluster',
            `nats://127.0.0.1:${clusterPort}`,
            '--cluster_name',
            CLUSTER_NAME,
            '--routes',
            routes,
            ...(partitionable ? ['--cluster_advertise', `127.0.0.1:${nowhere}`] : []),
            ...(options.advertise === false ? ['--no_advertise'] : []),
            '-sd',
            storeDir,
          ],
          { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...options.env?.(i) } },
        );
        child = proc;
        running.add(proc);
        proc.stdout!.on('data', record);
        proc.stderr!.on('data', record);
        exited = new Promise<void>((done) =>
          proc.once('exit', () => {
            running.delete(proc);
            done();
          }),
        );
        proc.once('error', (err) => record(Buffer.from(`spawn error: ${err.message}`)));
        await poll(
          `${name} to start (ports ${port}/${monitorPort}/${clusterPort})`,
          START_TIMEOUT_MS,
          async () => {
            if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`${name} exited during startup. Its log:\n${lines.join('\n')}`);
            if ((await httpStatus(monitorPort, '/varz')) !== 200) return undefined;
            return opts.healthy === false || (await healthy()) ? true : undefined;
          },
          () => `Its log:\n${lines.join('\n')}`,
        ).catch(async (err: unknown) => {
          if (proc.exitCode !== null) throw new Error(`${name} exited during startup (code ${proc.exitCode}). Its log:\n${lines.join('\n')}`);
          throw err;
        });
      },
    };
    nodes.push(node);
  }

  const urls = nodes.map((n) => n.url);
  // one admin connection per node, each to that node only: a query must not go through a node that
  // is cut off (its clients stay connected to it, and it knows no leader)
  const adminConnections = new Map<number, Promise<NatsConnection>>();
  const adminOf = (node: NatsClusterNode) => {
    let c = adminConnections.get(node.index);
    if (!c) {
      c = connectNats({ servers: node.url, ...ADMIN, reconnectWaitMs: 50, timeoutMs: 2000, name: 'nats-cluster-harness', waitForServer: true });
      adminConnections.set(node.index, c);
    }
    return c;
  };
  // a paused node answers nothing until resumed: queries go elsewhere
  const reachable = () => nodes.filter((n) => n.running && !n.paused && !cut.has(n.index));
  const adminConnection = () => adminOf(reachable()[0] ?? nodes[0]!);
  const admin = async () => jetstreamManager(await adminConnection(), { timeout: 2000 });
  const streamInfo = async (stream: string) => {
    for (const node of reachable()) {
      try {
        const jsm = await jetstreamManager(await adminOf(node), { timeout: 2000 });
        const info = await jsm.streams.info(stream);
        if (info.cluster?.leader) return info;
      } catch {
        // elections, restarts: try the next node
      }
    }
    return undefined;
  };
  const byName = (name: string | undefined) => nodes.find((n) => n.name === name);
  const describeNodes = () =>
    nodes
      .map(
        (n) =>
          `${n.name}: ${n.running ? (n.paused ? 'paused (SIGSTOP)' : 'running') : 'stopped'}${cut.has(n.index) ? ', isolated' : ''}; last lines:\n    ${n.log().split('\n').slice(-6).join('\n    ')}`,
      )
      .join('\n');
  const setCut = (node: NatsClusterNode, on: boolean) => {
    if (!partitionable) throw new Error('this cluster was started with partitionable: false: its routes are direct and cannot be cut');
    if (on) cut.add(node.index);
    else cut.delete(node.index);
    for (let i = 0; i < size; i++) {
      for (let j = 0; j < size; j++) {
        const p = proxies[i]![j];
        if (!p) continue;
        // a route is up only when neither end is cut off
        if (cut.has(i) || cut.has(j)) p.partition();
        else p.heal();
      }
    }
  };
  // healthy: /healthz answers 200 and the running nodes agree on a JetStream meta leader (nats-server
  // 2.9's /healthz can answer 200 before one is elected, and stream requests sent then go unanswered)
  const waitHealthy = (timeoutMs = START_TIMEOUT_MS) =>
    poll(
      'every running node to report healthy and the same JetStream meta leader',
      timeoutMs,
      async () => {
        const up = nodes.filter((n) => n.running);
        const states = await Promise.all(up.map((n) => n.healthy()));
        if (!states.every(Boolean)) return undefined;
        const leaders = await Promise.all(
          up.map((n) =>
            getJson<{ meta_cluster?: { leader?: string } }>(n.monitorPort, '/jsz').then(
              (j) => j.meta_cluster?.leader,
              () => undefined,
            ),
          ),
        );
        const leader = leaders[0];
        const leaderNode = up.find((n) => n.name === leader);
        if (!leader || !leaders.every((l) => l === leader) || !leaderNode) return undefined;
        // and the leader sees every other running node as a current peer: a stream placed on 3
        // replicas just after the election is refused ("no suitable peers for placement, peer offline")
        const meta = await getJson<{ meta_cluster?: { replicas?: { name: string; current?: boolean; offline?: boolean }[] } }>(
          leaderNode.monitorPort,
          '/jsz',
        ).then(
          (j) => j.meta_cluster?.replicas ?? [],
          () => undefined,
        );
        if (!meta) return undefined;
        const peers = up.filter((n) => n !== leaderNode).map((n) => n.name);
        return peers.every((name) => meta.some((r) => r.name === name && r.current === true && r.offline !== true)) ? true : undefined;
      },
      describeNodes,
    ).then(() => undefined);

  const cluster: NatsCluster = {
    nodes,
    urls,
    url: urls.join(','),
    isolate: (node) => setCut(node, true),
    heal: (node) => setCut(node, false),
    isolated: (node) => cut.has(node.index),
    adminConnection,
    admin,
    streamInfo,
    streamLeader: (stream, timeoutMs = 20_000) =>
      poll(
        `a leader of stream ${stream}`,
        timeoutMs,
        async () => {
          const info = await streamInfo(stream);
          const leader = byName(info?.cluster?.leader);
          return leader?.running && !leader.paused && !cut.has(leader.index) ? leader : undefined;
        },
        describeNodes,
      ),
    waitStreamCurrent: (stream, opts = {}) => {
      const replicas = opts.replicas ?? 3;
      let last = '';
      return poll(
        `stream ${stream} to have a leader and ${replicas - 1} current followers`,
        opts.timeoutMs ?? 30_000,
        async () => {
          const info = await streamInfo(stream);
          const c = info?.cluster;
          last = c ? `leader ${c.leader}, replicas ${JSON.stringify(c.replicas ?? [])}` : 'no stream info';
          const followers = (c?.replicas ?? []).filter((r) => r.current && !r.offline);
          return info && info.config.num_replicas === replicas && followers.length === replicas - 1 ? info : undefined;
        },
        () => `last: ${last}\n${describeNodes()}`,
      );
    },
    moveLeader: async (stream, node, timeoutMs = 30_000) => {
      await poll(
        `${node.name} to lead stream ${stream}`,
        timeoutMs,
        async () => {
          const info = await streamInfo(stream);
          if (!info) return undefined;
          if (info.cluster?.leader === node.name) return true;
          // step down only once every replica is current, or the target may not be electable
          if (!(info.cluster?.replicas ?? []).every((r) => r.current && !r.offline)) return undefined;
          const nc = await adminOf(reachable()[0]!);
          await nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${stream}`, undefined, { timeout: 2000 }).catch(() => undefined);
          // the election takes a moment: poll again
          return undefined;
        },
        describeNodes,
      );
    },
    waitHealthy,
    killAll: async () => {
      await Promise.all(nodes.map((n) => n.kill()));
    },
    startAll: async () => {
      await Promise.all(nodes.filter((n) => !n.running).map((n) => n.start({ healthy: false })));
      await waitHealthy();
    },
    dispose: async () => {
      for (const c of adminConnections.values()) await (await c.catch(() => undefined))?.close().catch(() => undefined);
      await Promise.all(nodes.map((n) => n.stop()));
      for (const row of proxies) for (const p of row) await p?.close();
      rmSync(dir, { recursive: true, force: true });
      tempDirs.delete(dir);
    },
  };
  try {
    // all at once: a node reports healthy only once the JetStream meta group has a leader
    await Promise.all(nodes.map((n) => n.start({ healthy: false })));
    await waitHealthy();
  } catch (err) {
    await cluster.dispose().catch(() => undefined);
    throw err;
  }
  return cluster;
}
