/**
 * A closed stdout ends a command quietly: real `sessiond` processes piped into a reader that stops
 * early (`| head -c 64`, as a person types it), with more output than a pipe holds, exit 0 with
 * nothing on stderr (no EPIPE stack trace); a worker whose stdout reader goes away stops as on
 * SIGTERM, handing its turn back.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { logSessions } from '../../src/sessions/log-sessions.ts';
import { catchUpProjection } from '../../src/projector/catch-up.ts';
import type { SessionStatus } from '../../src/sessions/sessions.ts';
import { BIN, ROOT, runCli, type CliResult } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../../src/testing/wait.ts';

const tmp = tempDir();
const db = tmp.file('many.db');

/** `sessiond ARGS | head -c 64`, in bash with pipefail: sessiond's exit code (head's is 0) and its stderr. */
function intoHead(args: string[]): Promise<CliResult & { bytes: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', 'set -o pipefail; "$0" "$@" | head -c 64 | wc -c', process.execPath, BIN, ...args], {
      cwd: ROOT,
      env: { ...process.env, FORCE_COLOR: '0', SESSIOND_LOG_FORMAT: 'text' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout, stderr, bytes: Number(stdout.trim()) });
    });
  });
}

test.before(async () => {
  const d = openDatabase(db);
  migrate(d);
  const log = new SqliteEventLog(d);
  const sessions = logSessions(log);
  for (let i = 0; i < 1100; i++) await sessions.admit(`ses_${i}`, { prompt: `prompt number ${i}`, wake: false });
  await catchUpProjection(d, log);
  await log.close();
  d.close();
});

for (const args of [['status', '--json', '--limit', '1000'], ['status', '--limit', '1000'], ['ls', '--json', '--limit', '1000'], ['check']]) {
  test(`closed stdout - sessiond ${args.join(' ')} | head -c 64: exit 0, nothing on stderr`, async () => {
    const full = await runCli([...args, '--db', db]);
    if (args[0] !== 'check') assert.ok(full.stdout.length > 64 * 1024, `more output than a pipe holds (${full.stdout.length} bytes)`);
    const r = await intoHead([...args, '--db', db]);
    assert.is(r.stderr, '', 'nothing on stderr');
    assert.is(r.code, 0);
    assert.is(r.bytes, 64, 'the reader got what it asked for');
  });
}

test('closed stdout - sessiond tail --from-start | head -c 64: stops following, exit 0, only its "following" line on stderr', async () => {
  const r = await intoHead(['tail', '--from-start', '--db', db]);
  assert.is(r.stderr, `following ${db}; Ctrl-C to stop\n`);
  assert.is(r.code, 0);
});

for (const format of ['text', 'json'] as const) {
  test(`closed stdout - a worker (--log-format ${format}) whose stdout reader goes away stops as on SIGTERM: exit 0, nothing on stderr, the turn handed back`, async () => {
    const file = tmp.file(`worker-${format}.db`);
    // three echo steps of 2 s: the line of the first step is the first write after the reader is gone
    const worker = spawn(process.execPath, [BIN, 'start', '--db', file, '--log-format', format, '--echo-delay-ms', '2000'], {
      cwd: ROOT,
      env: { ...process.env, FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let stderr = '';
    worker.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => worker.on('exit', (code) => resolve(code)));
    try {
      worker.stdout.on('data', (d) => (out += d));
      await waitFor(() => out.includes('send it a prompt'), { timeoutMs: 30_000, what: 'the worker up' });
      const admitted = await runCli(['prompt', 'ses_w', 'one two three four five six', '--db', file]);
      assert.is(admitted.code, 0, admitted.stderr);
      await waitFor(() => out.includes('claimed'), { timeoutMs: 30_000, what: 'the turn claimed' });
      worker.stdout.destroy(); // the reader goes away while the turn runs
      const code = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r('still running after 20 s'), 20_000))]);
      assert.is(code, 0, `the worker's exit (stderr: ${stderr})`);
      assert.is(stderr, '', 'nothing on stderr');
      const status = JSON.parse((await runCli(['status', 'ses_w', '--db', file, '--json'])).stdout) as SessionStatus;
      assert.equal(
        [status.owner, status.outcome, status.pendingCount],
        [null, 'released', 1],
        `handed back: no owner left holding a lease, the prompt pending again (${JSON.stringify(status)})`,
      );
    } finally {
      if (worker.exitCode === null) worker.kill('SIGKILL');
    }
  });
}

test.after(() => tmp.remove());

test.run();
