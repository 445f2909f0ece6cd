/**
 * `sessiond delete`, `retain` and `deletions` as real processes on a SQLite file: delete needs
 * --yes and prints the audit line; retain --dry-run lists, --archive exports before deleting (the
 * archive replays into a database that has them again), only sessions between turns and older than
 * the time go; over NATS both still need --yes (test/nats/cli-delete.test.ts deletes there).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEngine } from '../../src/engine.ts';
import { ManualClock } from '../../src/clock.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { runCli, startCli } from '../support/cli.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';
import { storedEventRows } from '../support/stored-events.ts';

const OLD = Date.parse('2026-01-05T10:00:00Z');

async function seeded() {
  const tmp = tempDir();
  const db = tmp.file('retain.db');
  const old = await openEngine({ file: db, runner: echoRunner({ steps: 1 }), clock: new ManualClock(OLD) });
  for (const id of ['ses_old_1', 'ses_old_2']) {
    await old.admit(id, { prompt: `private words of ${id}` });
    await old.awaitIdle(id);
  }
  await old.admit('ses_old_queued', { prompt: 'never ran', wake: false }); // old, but an input still waits
  await old.close();
  const now = await openEngine({ file: db, runner: echoRunner({ steps: 1 }) });
  await now.admit('ses_new', { prompt: 'recent' });
  await now.awaitIdle('ses_new');
  await now.close();
  return { tmp, db };
}

const sessionsIn = (file: string) => {
  const d = openDatabase(file);
  try {
    return [...new Set(storedEventRows(d).map((r) => r.aggregate_id))].sort();
  } finally {
    d.close();
  }
};

test('cli delete - refuses without --yes; with it prints the audit line; deletions lists it; the session is gone', async () => {
  const { tmp, db } = await seeded();
  const unsure = await runCli(['delete', 'ses_new', '--db', db]);
  assert.is(unsure.code, 2);
  assert.match(unsure.stderr, 'add --yes to confirm');
  const done = await runCli(['delete', 'ses_new', '--yes', '--reason', 'GDPR request 7', '--by', 'dpo@example.com', '--db', db]);
  assert.is(done.code, 0, done.stderr);
  assert.match(done.stdout, /^deleted ses_new \(\d+ events, last seq \d+\) at 20\d\d-[^ ]+ by dpo@example\.com: GDPR request 7\n$/);
  const listed = await runCli(['deletions', '--db', db, '--json']);
  assert.equal(
    listed.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).sessionId),
    ['ses_new'],
  );
  assert.not.ok(sessionsIn(db).includes('ses_new'));
  const again = await runCli(['delete', 'ses_new', '--yes', '--db', db]);
  assert.is(again.code, 66, 'not found');
  assert.match((await runCli(['status', 'ses_new', '--db', db])).stdout, 'no such session');
  tmp.remove();
});

test('cli retain - dry run lists; --archive exports then deletes only old sessions between turns; the archive replays', async () => {
  const { tmp, db } = await seeded();
  const before = ['--settled-before', '2026-06-01T00:00:00Z', '--db', db];
  const dry = await runCli(['retain', ...before, '--dry-run']);
  assert.is(dry.code, 0, dry.stderr);
  assert.match(dry.stdout, '2 sessions between turns, last changed before 2026-06-01T00:00:00.000Z, would be deleted:\n  ses_old_1\n  ses_old_2\n');
  assert.equal(sessionsIn(db), ['ses_new', 'ses_old_1', 'ses_old_2', 'ses_old_queued'], 'a dry run deletes nothing');
  const archive = tmp.file('old.sdx');
  const kept = await runCli(['retain', ...before, '--archive', archive, '--yes']);
  assert.is(kept.code, 0, kept.stderr);
  assert.match(kept.stdout, /archived 2 sessions \(\d+ events\) to .*old\.sdx/);
  assert.match(kept.stdout, /deleted ses_old_1 .* retention: last changed before 2026-06-01T00:00:00\.000Z; archived to .*old\.sdx/);
  assert.match(kept.stdout, 'deleted 2 sessions last changed before');
  assert.equal(sessionsIn(db), ['ses_new', 'ses_old_queued'], 'the recent one and the one with a waiting input stay');
  const copy = tmp.file('copy.db');
  const replayed = await runCli(['replay', archive, '--db', copy]);
  assert.is(replayed.code, 0, replayed.stderr);
  assert.equal(sessionsIn(copy), ['ses_old_1', 'ses_old_2'], 'the archive holds them whole');
  assert.match((await runCli(['retain', ...before, '--yes'])).stdout, 'nothing to do');
  tmp.remove();
});

test('cli delete beside a running worker - the session goes while the worker runs; a new session under the id runs from sequence 1', async () => {
  const tmp = tempDir();
  const db = tmp.file('worker.db');
  const worker = startCli(['start', '--db', db, '--echo-delay-ms', '1', '--sweep-ms', '200']);
  try {
    await worker.waitFor('send it a prompt');
    assert.is((await runCli(['prompt', 'ses_w', 'the old words', '--db', db])).code, 0);
    await worker.waitFor('ses_w  turn succeeded');
    const deleted = await runCli(['delete', 'ses_w', '--yes', '--db', db]);
    assert.is(deleted.code, 0, deleted.stderr);
    const again = await runCli(['prompt', 'ses_w', 'new words', '--db', db]);
    assert.match(again.stdout, 'at sequence 1', 'the id starts afresh');
    await waitFor(async () => JSON.parse((await runCli(['status', 'ses_w', '--db', db, '--json'])).stdout).state === 'settled', {
      timeoutMs: 20_000,
      what: 'the worker to run the new session (it drops what it cached of the old one at its next sweep)',
    }).catch((err) => {
      throw new Error(`${(err as Error).message}; the worker said:\n${worker.output()}`);
    });
    const status = JSON.parse((await runCli(['status', 'ses_w', '--db', db, '--json'])).stdout);
    assert.equal([status.executions, status.outcome], [1, 'succeeded']);
    const exported = tmp.file('w.sdx');
    assert.is((await runCli(['export', '--session', 'ses_w', '--out', exported, '--db', db])).code, 0);
    assert.is((await runCli(['check', '--db', db])).code, 0, 'the log that is left passes check');
  } finally {
    worker.child.kill('SIGKILL');
    await worker.exited;
    tmp.remove();
  }
});

test('cli delete and retain over NATS also need --yes (refused before connecting); test/nats/cli-delete.test.ts deletes over NATS', async () => {
  for (const args of [
    ['delete', 'ses_1'],
    ['retain', '--settled-before', '30d'],
  ]) {
    const r = await runCli([...args, '--nats', 'nats://127.0.0.1:1']);
    assert.is(r.code, 2, r.stderr);
    assert.match(r.stderr, 'add --yes to confirm');
  }
});

test.run();
