/**
 * A test world for the Go and Python clients' tests: a real nats-server (the project's pinned
 * build, nats.conf's users, on loopback, a temporary store, streams set up as `sessiond setup`
 * does) and real `sessiond start --nats` workers (the echo runner), driven by a test in any
 * language over this process's stdin and stdout, one JSON object per line.
 *
 *   node --import tsx clients/testing/world.ts [--workers N] [--echo-delay-ms MS] [--tenants NAME,...]
 *
 * First line out: {"ready":true,"url","users":{"worker":{"user","pass"},...},"workers":[pid...]}.
 * `--tenants acme,globex`: nats.conf also holds those tenants' users, as `sessiond setup --tenant
 * NAME` prints them (every scope), listed in "users" as "tenant-NAME" (docs/nats.md, "Tenants").
 * Then each line in is a command and gets one line out, {"ok":true,...} or {"ok":false,"error"}:
 *
 *   {"cmd":"kill_worker","index":0}            SIGKILL that worker; answers once it has exited
 *   {"cmd":"start_worker"}                     a new worker; answers {"index","pid"} once it serves commands
 *   {"cmd":"restart_nats"}                     stops nats-server and starts it again (same port and store)
 *   {"cmd":"admit","sessionId","prompt","id"?} admits through the Node client (SessiondClient, user client)
 *   {"cmd":"events","sessionId"}               {"events":[...]}: the session's events read from the stream
 *                                              by the Node client (seq, type, payload, position, ...)
 *   {"cmd":"stop"}                             stops everything and exits (as does the end of stdin)
 *
 * Workers print to this process's stderr, prefixed with their index, so a failing test shows them.
 */
import { createInterface } from 'node:readline';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SessiondClient } from '../../src/client/client.ts';
import { startNatsServer, setupStreams, REPO_NATS_CONF, ADMIN, CLIENT, COMMANDS, OBSERVER, WORKER, type NatsServer } from '../../src/testing/nats-server.ts';

const BIN = fileURLToPath(new URL('../../bin/sessiond.js', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Worker {
  child: ChildProcess;
  exited: Promise<void>;
}

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  if (i === -1) return fallback;
  const value = Number(process.argv[i + 1]);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} needs a whole number, got ${process.argv[i + 1]}`);
  return value;
}

const say = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
const dir = mkdtempSync(join(tmpdir(), 'sessiond-world-'));
const echoDelayMs = option('--echo-delay-ms', 5);
let server: NatsServer | undefined;
let client: SessiondClient | undefined;
const workers: (Worker | undefined)[] = [];

function tenantsOption(): string[] {
  const i = process.argv.indexOf('--tenants');
  if (i === -1) return [];
  const names = (process.argv[i + 1] ?? '').split(',').filter(Boolean);
  if (names.length === 0 || names.some((n) => !/^[A-Za-z0-9_-]{1,64}$/.test(n)))
    throw new Error(`--tenants needs names (letters, digits, _ or -) separated by commas, got ${process.argv[i + 1]}`);
  return names;
}

/** nats.conf with each tenant's user block pasted in as `sessiond setup --tenant NAME` prints it. */
async function tenantConfig(tenants: string[]): Promise<{ config: string; users: Record<string, { user: string; pass: string }> }> {
  let conf = readFileSync(REPO_NATS_CONF, 'utf8');
  const users: Record<string, { user: string; pass: string }> = {};
  for (const tenant of tenants) {
    const pass = `${tenant}-${randomBytes(12).toString('hex')}`;
    const child = spawn(process.execPath, [BIN, 'setup', '--tenant', tenant, '--tenant-password', pass], {
      cwd: ROOT,
      env: { ...process.env, FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr!.on('data', (d: Buffer) => (err += d.toString('utf8')));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    if (code !== 0) throw new Error(`sessiond setup --tenant ${tenant} exited with ${code}: ${err.slice(-2000)}`);
    conf = conf.replace(/users:\s*\[/, (m) => `${m}\n${out}`);
    users[`tenant-${tenant}`] = { user: `tenant-${tenant}`, pass };
  }
  const config = join(dir, 'nats-tenants.conf');
  writeFileSync(config, conf);
  return { config, users };
}

async function startWorker(): Promise<{ index: number; pid: number }> {
  const index = workers.length;
  const child = spawn(
    process.execPath,
    [
      BIN,
      'start',
      '--nats',
      server!.url,
      '--nats-user',
      WORKER.user,
      '--nats-commands-user',
      COMMANDS.user,
      '--db',
      join(dir, `w${index}.db`),
      '--echo-delay-ms',
      String(echoDelayMs),
      '--lease-ms',
      '2000',
      '--heartbeat-ms',
      '500',
      '--sweep-ms',
      '300',
      // the clients' tests send https://example.com URLs; allowed so that they need no DNS
      '--allow-url-host',
      'example.com',
    ],
    {
      cwd: ROOT,
      env: { ...process.env, FORCE_COLOR: '0', SESSIOND_LOG_FORMAT: 'text', SESSIOND_NATS_PASS: WORKER.pass, SESSIOND_NATS_COMMANDS_PASS: COMMANDS.pass },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  workers.push({ child, exited });
  let out = '';
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => {
      const text = d.toString('utf8');
      for (const line of text.split('\n')) if (line.trim()) process.stderr.write(`[w${index}] ${line}\n`);
      out += text;
      if (out.includes('send it a prompt')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then(() => reject(new Error(`worker ${index} exited before it was ready:\n${out.slice(-2000)}`)));
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  try {
    await ready;
  } finally {
    clearTimeout(timer);
  }
  return { index, pid: child.pid! };
}

async function handle(line: string): Promise<boolean> {
  const command = JSON.parse(line) as { cmd?: string; index?: number; sessionId?: string; prompt?: string; id?: string };
  switch (command.cmd) {
    case 'kill_worker': {
      const w = workers[command.index ?? -1];
      if (!w) throw new Error(`no worker ${command.index}`);
      w.child.kill('SIGKILL');
      await w.exited;
      workers[command.index!] = undefined;
      say({ ok: true });
      return true;
    }
    case 'start_worker':
      say({ ok: true, ...(await startWorker()) });
      return true;
    case 'restart_nats':
      await server!.restart();
      say({ ok: true });
      return true;
    case 'admit': {
      const receipt = await client!.admit(command.sessionId!, { prompt: command.prompt!, ...(command.id ? { id: command.id } : {}) });
      say({ ok: true, receipt });
      return true;
    }
    case 'events': {
      const events = await client!.replay({ sessionId: command.sessionId! });
      say({ ok: true, events });
      return true;
    }
    case 'stop':
      return false;
    default:
      throw new Error(`unknown command ${JSON.stringify(command.cmd)}: kill_worker, start_worker, restart_nats, admit, events, stop`);
  }
}

async function stop(): Promise<void> {
  await client?.close().catch(() => undefined);
  for (const w of workers) {
    if (!w) continue;
    w.child.kill('SIGTERM');
    const killer = setTimeout(() => w.child.kill('SIGKILL'), 10_000);
    await w.exited;
    clearTimeout(killer);
  }
  await server?.dispose();
  rmSync(dir, { recursive: true, force: true });
}

try {
  const tenants = tenantsOption();
  const tenantUsers = tenants.length > 0 ? await tenantConfig(tenants) : undefined;
  server = await startNatsServer(tenantUsers ? { config: tenantUsers.config } : {});
  await setupStreams(server.url);
  const pids: number[] = [];
  for (let i = 0; i < option('--workers', 1); i++) pids.push((await startWorker()).pid);
  client = await SessiondClient.connect({ connection: { servers: server.url, ...CLIENT } });
  say({ ready: true, url: server.url, users: { worker: WORKER, commands: COMMANDS, client: CLIENT, observer: OBSERVER, admin: ADMIN, ...tenantUsers?.users }, workers: pids });
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (!line.trim()) continue;
    try {
      if (!(await handle(line))) break;
    } catch (err) {
      say({ ok: false, error: err instanceof Error ? err.message : String(err) });
    }
  }
} catch (err) {
  say({ ready: false, error: err instanceof Error ? err.message : String(err) });
  process.exitCode = 1;
} finally {
  await stop();
}
process.exit();
