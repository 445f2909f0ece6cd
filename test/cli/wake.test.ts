/**
 * `sessiond wake SESSION --db FILE` as a real subprocess: what a wake does on a SQLite file, in plain
 * words, with the exit codes of the other commands, the file left as it was; and `wake` in --help.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../../src/testing/wait.ts';
import type { SessionStatus } from '../../src/sessions/sessions.ts';

test('cli wake (db) - requested for a worker, refused in plain words for --no-wake inputs, nothing to run (1), unknown (66); read-only', async () => {
  const tmp = tempDir();
  const db = tmp.file('wake.db');
  const ok = async (...args: string[]) => {
    const r = await runCli([...args, '--db', db]);
    assert.is(r.code, 0, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    return r.stdout;
  };
  await ok('prompt', 'ses_asked', 'run me');
  await ok('prompt', 'ses_held', 'hold me', '--no-wake');
  const bytes = readFileSync(db);

  const asked = await runCli(['wake', 'ses_asked', '--db', db]);
  assert.is(asked.code, 0, asked.stderr);
  assert.is(
    asked.stdout,
    `ses_asked: its pending inputs asked for a wake, so the worker on ${db} runs them (sessiond start --db ${db}; none running: they wait for one)\n`,
  );
  const held = await runCli(['wake', 'ses_held', '--db', db]);
  assert.is(held.code, 1, held.stdout + held.stderr);
  assert.match(held.stdout, 'ses_held: not woken: its pending inputs were admitted with --no-wake, and a SQLite file holds no wake for the worker to act on.');
  assert.match(held.stdout, `a prompt admitted with a wake runs them with it (sessiond prompt ses_held TEXT --db ${db})`);
  assert.is(held.stderr, '');
  const unknown = await runCli(['wake', 'ses_nobody', '--db', db]);
  assert.is(unknown.code, 66, unknown.stdout + unknown.stderr);
  assert.is(
    unknown.stderr,
    'sessiond: Session ses_nobody has no events, so there is nothing to wake. Check the session id, or admit a prompt first (it creates the session).\n',
  );
  const badId = await runCli(['wake', 'ses.dots', '--db', db]);
  assert.is(badId.code, 2, badId.stderr);
  const missing = await runCli(['wake', 'ses_asked', '--db', tmp.file('none.db')]);
  assert.is(missing.code, 2, missing.stderr);
  assert.match(missing.stderr, 'No database at');
  assert.ok(readFileSync(db).equals(bytes), 'a wake on a SQLite file writes nothing');

  // the worker runs what asked for a wake; then there is nothing to run
  const worker = startCli(['start', '--db', db, '--echo-delay-ms', '0']);
  await worker.waitFor('ses_asked  turn succeeded');
  worker.child.kill('SIGTERM');
  assert.is(await worker.exited, 0, worker.output());
  const done = await runCli(['wake', 'ses_asked', '--db', db]);
  assert.is(done.code, 1, done.stdout + done.stderr);
  assert.is(done.stdout, 'ses_asked: nothing to run (no input is pending); admit one with sessiond prompt ses_asked TEXT\n');
  // and what the refusal said to do runs the held input
  await ok('prompt', 'ses_held', 'and now', '--id', 'inp_now');
  const again = startCli(['start', '--db', db, '--echo-delay-ms', '0']);
  await waitFor(async () => (JSON.parse(await ok('status', 'ses_held', '--json')) as SessionStatus).pendingCount === 0, {
    timeoutMs: 20_000,
    what: 'ses_held ran',
  });
  again.child.kill('SIGTERM');
  assert.is(await again.exited, 0, again.output());
  tmp.remove();
});

test('cli wake - listed in --help with what it does', async () => {
  const help = await runCli(['--help']);
  assert.is(help.code, 0);
  assert.match(help.stdout, /\n {2}wake \[options\] <session>\s+run a session's pending inputs/);
  const own = await runCli(['wake', '--help']);
  assert.is(own.code, 0);
  assert.match(own.stdout, 'Usage: sessiond wake [options] <session>');
  assert.match(own.stdout, '--nats <url>');
  assert.match(own.stdout, '--db <file>');
});

test.run();
