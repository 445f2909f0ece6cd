/**
 * A real nats-server for tests (the package's nats.conf, loopback, free ports, throwaway store);
 * killed when the test process exits. Why: docs/testing.md#the-nats-harnesses.
 *
 *   const server = await startNatsServer();   // server.url; kill(), restart(), dispose()
 */
import { setupCapacityBucket } from '../capacity/kv-capacity-store.ts';
import { setupBudgetsBucket } from '../budget/kv-tenant-budget-store.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer, connect as tcpConnect } from 'node:net';
import { get as httpGet } from 'node:http';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats } from '../nats/connection.ts';
import { setupEventStream } from '../nats/stream.ts';
import { setupSnapshotStream } from '../nats/snapshot-store.ts';
import { setupAuditStream } from '../nats/deletion-stream.ts';
import { setupBlobBucket } from '../nats/object-blob-store.ts';

/** nats.conf at the package root (src/testing/ in a clone, dist/testing/ built or installed: two levels up either way). */
export const REPO_NATS_CONF = resolve(fileURLToPath(new URL('../../nats.conf', import.meta.url)));
/** Debian's nats-server (`apt-get install nats-server`: 2.9.10 on bookworm), supported for a single server. */
export const DEBIAN_NATS_SERVER_BIN = process.env.SESSIOND_DEBIAN_NATS_SERVER ?? '/usr/sbin/nats-server';
/** The project's pinned build (scripts/tools.mjs: `go install` into .tools/bin): only in a clone of sessiond, never in the package. */
export const PROJECT_NATS_SERVER_BIN = resolve(fileURLToPath(new URL('../../.tools/bin/nats-server', import.meta.url)));

/** `name` on the PATH, as a shell would find it (undefined when it is on none of its folders). */
export function onPath(name: string, path = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    const file = join(dir, name);
    if (existsSync(file)) return file;
  }
  return undefined;
}

/**
 * The nats-server the harness runs: SESSIOND_NATS_SERVER, else the project's pinned build when it is
 * there (a clone where `npm test` built it), else `nats-server` on the PATH, else Debian's path. It may
 * not exist: `startNatsServer` then throws `missingServer`'s message.
 */
export const NATS_SERVER_BIN =
  process.env.SESSIOND_NATS_SERVER ?? (existsSync(PROJECT_NATS_SERVER_BIN) ? PROJECT_NATS_SERVER_BIN : (onPath('nats-server') ?? DEBIAN_NATS_SERVER_BIN));
export const WORKER = { user: 'worker', pass: 'worker-dev-secret' } as const;
export const CLIENT = { user: 'client', pass: 'client-dev-secret' } as const;
export const OBSERVER = { user: 'observer', pass: 'observer-dev-secret' } as const;
/** Serves commands (a worker's second connection): may publish only into client inboxes. */
export const COMMANDS = { user: 'commands', pass: 'commands-dev-secret' } as const;
/** Manages the stream (sessiond setup); never used by workers. */
export const ADMIN = { user: 'admin', pass: 'admin-dev-secret' } as const;

const START_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 5_000;
const LOG_LINES = 60;

export interface NatsServer {
  readonly url: string;
  readonly port: number;
  readonly monitorPort: number;
  readonly storeDir: string;
  /** The server's process id (undefined while stopped). */
  readonly pid: number | undefined;
  /** The last lines the server logged, for failure messages. */
  log(): string;
  /** SIGTERM, then SIGKILL if it has not exited within a deadline. The store is kept. */
  stop(): Promise<void>;
  /** Stops (if running) and starts again on the same ports with the same store. */
  restart(): Promise<void>;
  /** SIGKILL, like a crash. The store is kept. */
  kill(): Promise<void>;
  /** Stops and deletes the store. */
  dispose(): Promise<void>;
}

/** What to do when the harness finds no nats-server at `bin`. */
export function missingServer(bin: string): string {
  const where =
    process.env.SESSIOND_NATS_SERVER !== undefined && bin === process.env.SESSIOND_NATS_SERVER
      ? `at ${bin} (SESSIOND_NATS_SERVER)`
      : `(SESSIOND_NATS_SERVER is not set, none is on the PATH, none at ${bin})`;
  const clone = existsSync(fileURLToPath(new URL('../../scripts/tools.mjs', import.meta.url)))
    ? ' In a clone of sessiond, node scripts/tools.mjs builds the pinned one into .tools/bin (with Go).'
    : '';
  return `nats-server not found ${where}: install nats-server (https://github.com/nats-io/nats-server/releases, or apt-get install nats-server) and put it on the PATH, or set SESSIOND_NATS_SERVER to its path.${clone}`;
}

/** Servers and stores the test process started (the cluster harness shares them): all killed and removed when it exits. */
export const running = new Set<ChildProcess>();
export const tempDirs = new Set<string>();
let exitHookInstalled = false;

/** Installs, once per process, the hook that SIGKILLs every server in `running` and removes every dir in `tempDirs` at exit. */
export function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of running) {
      try {
        child.kill('SIGKILL');
      } catch {
        /* already gone */
      }
    }
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  });
  process.once('SIGINT', () => process.exit(130));
  process.once('SIGTERM', () => process.exit(143));
}

/** The kernel's range for ephemeral ports (what `listen(0)` and outgoing connections take). */
function ephemeralRange(): [number, number] {
  try {
    const [lo, hi] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (lo && hi) return [lo, hi];
  } catch {
    /* not Linux */
  }
  return [32768, 60999];
}

const taken = new Set<number>();

/**
 * A free port below the ephemeral range. Not `freePort()`, whose ports come from
 * the ephemeral range: a node keeps its ports across kills and restarts, and between two starts an
 * ephemeral port can be handed to anything (this harness's proxies, an outgoing connection, another
 * test), which made a node fail with "address already in use". Below the range only a listener
 * that asks for that very port can take it.
 */
export async function stablePort(): Promise<number> {
  const [low] = ephemeralRange();
  const floor = Math.min(10_000, low - 2_000);
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = floor + Math.floor(Math.random() * (low - floor));
    if (taken.has(port)) continue;
    const free = await new Promise<boolean>((done) => {
      const srv = createServer();
      srv.unref();
      srv.once('error', () => done(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => done(true)));
    });
    if (free) {
      taken.add(port);
      return port;
    }
  }
  throw new Error(`no free port found below the ephemeral range (${low})`);
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolvePort(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = tcpConnect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => {
      socket.destroy();
      done(false);
    });
  });
}

function healthy(monitorPort: number): Promise<boolean> {
  return new Promise((done) => {
    const req = httpGet({ host: '127.0.0.1', port: monitorPort, path: '/healthz', timeout: 1000 }, (res) => {
      res.resume();
      done(res.statusCode === 200);
    });
    req.once('error', () => done(false));
    req.once('timeout', () => {
      req.destroy();
      done(false);
    });
  });
}

/** The config without `store_dir` (which would clash with `-sd`), with `extraUsers` added unrestricted. */
function deriveConfig(config: string, dir: string, extraUsers: readonly { user: string; pass: string }[]): string {
  let text = readFileSync(config, 'utf8').replace(/^\s*store_dir\s*[:=]?.*$/gm, '  # store_dir: set by the test harness with -sd');
  if (extraUsers.length > 0) {
    const added = extraUsers.map((u) => `      { user: ${JSON.stringify(u.user)}, password: ${JSON.stringify(u.pass)} }`).join('\n');
    if (!/users:\s*\[/.test(text)) throw new Error(`${config} has no users list to add ${extraUsers.map((u) => u.user).join(', ')} to`);
    text = text.replace(/users:\s*\[/, (m) => `${m}\n${added}`);
  }
  const file = join(dir, 'nats.conf');
  writeFileSync(file, text);
  return file;
}

/**
 * Creates sessiond's streams, KV buckets and blob bucket (SESSIOND_BLOBS) on a server as the admin
 * user, as `sessiond setup` does on a fresh deployment (workers never create them: nats.conf does
 * not let them).
 */
export async function setupStreams(url: string | string[]): Promise<void> {
  const nc = await connectNats({ servers: url, ...ADMIN, waitForServer: true });
  try {
    const jsm = await jetstreamManager(nc);
    await setupSnapshotStream(jsm);
    await setupEventStream(jsm, { manage: true });
    await setupAuditStream(jsm);
    await setupCapacityBucket(nc);
    await setupBudgetsBucket(nc);
    await setupBlobBucket(jsm);
  } finally {
    await nc.close();
  }
}

/**
 * `extraUsers` get no permission limits: for benchmarks that measure the raw substrate (their own
 * streams and subjects) next to sessiond, never for tests of sessiond's own users.
 * `streams` (default true): sessiond's streams are created once the server is up (`setupStreams`),
 * as an operator does before starting workers; false for a fresh deployment.
 */
export async function startNatsServer(
  options: { config?: string; extraUsers?: readonly { user: string; pass: string }[]; bin?: string; streams?: boolean } = {},
): Promise<NatsServer> {
  installExitHook();
  const config = options.config ?? REPO_NATS_CONF;
  const bin = options.bin ?? NATS_SERVER_BIN;
  if (!existsSync(bin)) throw new Error(missingServer(bin));
  const dir = mkdtempSync(join(tmpdir(), 'sessiond-nats-'));
  tempDirs.add(dir);
  const storeDir = join(dir, 'store');
  const conf = deriveConfig(config, dir, options.extraUsers ?? []);
  // below the ephemeral range: restart() binds the same ports again, which an outgoing connection could have taken meanwhile
  const port = await stablePort();
  const monitorPort = await stablePort();
  const lines: string[] = [];
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const log = () => lines.join('\n');
  const record = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(line);
    if (lines.length > LOG_LINES) lines.splice(0, lines.length - LOG_LINES);
  };

  const start = async () => {
    const proc = spawn(bin, ['-c', conf, '-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort), '-sd', storeDir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    running.add(proc);
    proc.stdout!.on('data', record);
    proc.stderr!.on('data', record);
    let gone = false;
    exited = new Promise<void>((done) =>
      proc.once('exit', () => {
        gone = true;
        running.delete(proc);
        done();
      }),
    );
    proc.once('error', (err) => record(Buffer.from(`spawn error: ${err.message}`)));
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (gone) throw new Error(`nats-server exited during startup (ports ${port}/${monitorPort}). Its log:\n${log()}`);
      if ((await canConnect(port)) && (await healthy(monitorPort))) return;
      if (Date.now() > deadline) {
        await halt('SIGKILL');
        throw new Error(`nats-server did not become ready within ${START_TIMEOUT_MS} ms. Its log:\n${log()}`);
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  const halt = async (signal: 'SIGTERM' | 'SIGKILL') => {
    const proc = child;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) {
      child = undefined;
      return;
    }
    proc.kill(signal);
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

  await start();
  if (options.streams ?? true) {
    try {
      await setupStreams(`nats://127.0.0.1:${port}`);
    } catch (err) {
      await halt('SIGKILL');
      throw err;
    }
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    monitorPort,
    storeDir,
    get pid() {
      return child?.pid;
    },
    log,
    stop: () => halt('SIGTERM'),
    kill: () => halt('SIGKILL'),
    restart: async () => {
      await halt('SIGTERM');
      await start();
    },
    dispose: async () => {
      await halt('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
      tempDirs.delete(dir);
    },
  };
}

/** A worker's flags (`sessiond start`) on NATS: nats.conf's worker user, and its commands user to serve commands. */
export function workerNatsFlags(servers: string): string[] {
  return [
    '--nats',
    servers,
    '--nats-user',
    WORKER.user,
    '--nats-pass',
    WORKER.pass,
    '--nats-commands-user',
    COMMANDS.user,
    '--nats-commands-pass',
    COMMANDS.pass,
  ];
}
