/**
 * The Go client's tenant tests' world: clients/testing/world.ts's nats-server and worker, with a
 * nats.conf holding the tenant users that `sessiond setup --tenant NAME --tenant-password P`
 * prints (as test/nats/tenants.test.ts makes it).
 *
 *   node --import tsx clients/go/testdata/tenant_world.ts acme=PASS globex=PASS
 *
 * First line out: {"ready":true,"url","users":{"client":{"user","pass"},"tenant-acme":{...},...}}.
 * It stops everything at the end of stdin.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNatsServer, setupStreams, CLIENT, COMMANDS, REPO_NATS_CONF, WORKER, type NatsServer } from '../../../src/testing/nats-server.ts';

const BIN = fileURLToPath(new URL('../../../bin/sessiond.js', import.meta.url));
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const say = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
const dir = mkdtempSync(join(tmpdir(), 'sessiond-go-tenants-'));
let server: NatsServer | undefined;
let worker: ChildProcess | undefined;

async function startWorker(): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [BIN, 'start', '--nats', server!.url, '--nats-user', WORKER.user, '--nats-commands-user', COMMANDS.user, '--db', join(dir, 'w.db'), '--echo-delay-ms', '200'],
    {
      cwd: ROOT,
      env: { ...process.env, FORCE_COLOR: '0', SESSIOND_LOG_FORMAT: 'text', SESSIOND_NATS_PASS: WORKER.pass, SESSIOND_NATS_COMMANDS_PASS: COMMANDS.pass },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => {
      const text = d.toString('utf8');
      for (const line of text.split('\n')) if (line.trim()) process.stderr.write(`[w] ${line}\n`);
      out += text;
      if (out.includes('send it a prompt')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', () => reject(new Error(`the worker exited before it was ready:\n${out.slice(-2000)}`)));
  });
  return child;
}

try {
  const users: Record<string, { user: string; pass: string }> = { client: CLIENT };
  let conf = readFileSync(REPO_NATS_CONF, 'utf8');
  for (const arg of process.argv.slice(2)) {
    const [tenant, pass] = arg.split('=') as [string, string];
    const printed = execFileSync(process.execPath, [BIN, 'setup', '--tenant', tenant, '--tenant-password', pass], { cwd: ROOT, encoding: 'utf8' });
    conf = conf.replace(/users:\s*\[/, (m) => `${m}\n${printed}`);
    users[`tenant-${tenant}`] = { user: `tenant-${tenant}`, pass };
  }
  const file = join(dir, 'nats-tenants.conf');
  writeFileSync(file, conf);
  server = await startNatsServer({ config: file });
  await setupStreams(server.url);
  worker = await startWorker();
  say({ ready: true, url: server.url, users });
  process.stdin.resume();
  await new Promise<void>((resolve) => process.stdin.once('end', () => resolve()));
} catch (err) {
  say({ ready: false, error: err instanceof Error ? err.message : String(err) });
  process.exitCode = 1;
} finally {
  if (worker && worker.exitCode === null) {
    const exited = new Promise<void>((r) => worker!.once('exit', () => r()));
    worker.kill('SIGTERM');
    const killer = setTimeout(() => worker!.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killer);
  }
  await server?.dispose();
  rmSync(dir, { recursive: true, force: true });
}
process.exit();
