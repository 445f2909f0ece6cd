import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { LATEST_SCHEMA_VERSION } from '../../src/storage/sqlite/migrations/index.ts';
import { pack } from '../../src/events/codec.ts';
import { startSessiond } from '../../src/host.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate, PROGRESS_FROM_ROWS } from '../../src/storage/sqlite/migrate.ts';

/** A file of schema 21 (a row per event) holding `n` events, as an older sessiond left it. */
function schema21File(file: string, n: number): void {
  const db = openDatabase(file);
  migrate(db, { target: 21 });
  const insert = db.prepare(
    "INSERT INTO event (id, aggregate_id, seq, type, version, time, data, committed_at) VALUES (?, ?, ?, 'input.admitted', 1, 1, ?, 1)",
  );
  db.transaction(() => {
    for (let i = 0; i < n; i++) {
      const data = pack({ inputId: `inp_${i}`, prompt: 'x', delivery: 'queue', wake: false });
      insert.run(`evt_${i}`, `ses_${i % 100}`, Math.floor(i / 100) + 1, data);
    }
  })();
  db.close();
}

const tenths = (text: string, label: string) => [...text.matchAll(new RegExp(`${label}: (\\d+)/(\\d+) rows \\((\\d+)%\\)`, 'g'))].map((m) => Number(m[3]));

test('cli migrate - creates the schema and prints the version, then is a no-op', async () => {
  const tmp = tempDir();
  const db = tmp.file('nested/x.db');
  const first = await runCli(['migrate', '--db', db]);
  assert.is(first.code, 0, first.stderr);
  assert.match(first.stdout, `upgraded from version 0 to ${LATEST_SCHEMA_VERSION}`);
  assert.not.match(first.stderr, 'upgrading to', 'a fresh file shows no progress');
  const second = await runCli(['migrate', '--db', db]);
  assert.is(second.code, 0);
  assert.match(second.stdout, `schema is at version ${LATEST_SCHEMA_VERSION}, nothing to do`);
  tmp.remove();
});

test('cli migrate - a large file of an older schema shows how far the upgrade to one row per append got', async () => {
  const tmp = tempDir();
  const db = tmp.file('old.db');
  const n = PROGRESS_FROM_ROWS + 2_000;
  schema21File(db, n);
  const r = await runCli(['migrate', '--db', db]);
  assert.is(r.code, 0, r.stderr);
  assert.equal(tenths(r.stderr, 'upgrading to schema 22 \\(event_batches\\)'), [0, 10, 20, 30, 40, 50, 60, 70, 80, 90], r.stderr);
  assert.match(r.stderr, `0/${n} rows (0%)`);
  assert.match(r.stdout, 'applied migration 22 (event_batches)');
  assert.match(r.stdout, `upgraded from version 21 to ${LATEST_SCHEMA_VERSION}`);
  const upgraded = openDatabase(db);
  assert.is(upgraded.prepare('SELECT COUNT(*) FROM event_batch').pluck().get(), n, 'every event kept');
  upgraded.close();
  tmp.remove();
});

test('cli migrate - a worker starting on a large file of an older schema says how far the upgrade got; on a small one it says nothing of it', async () => {
  const tmp = tempDir();
  for (const [name, n, shown] of [
    ['large.db', PROGRESS_FROM_ROWS, true],
    ['small.db', PROGRESS_FROM_ROWS - 1, false],
  ] as const) {
    const file = tmp.file(name);
    schema21File(file, n);
    const lines: string[] = [];
    const host = await startSessiond({ db: file, runner: echoRunner(), report: { out: (l) => lines.push(l), err: (l) => lines.push(l) } });
    await host.close();
    const seen = tenths(lines.join('\n'), `upgrading ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} to schema 22 \\(event_batches\\)`);
    assert.equal(seen, shown ? [0, 10, 20, 30, 40, 50, 60, 70, 80, 90] : [], lines.join('\n'));
  }
  tmp.remove();
});

test('cli migrate - bad arguments print usage and exit 2', async () => {
  const bad = await runCli(['migrate', '--nope']);
  assert.is(bad.code, 2);
  assert.match(bad.stderr, "unknown option '--nope'");
  assert.match(bad.stderr, 'Usage: sessiond migrate');
  const none = await runCli([]);
  assert.is(none.code, 2);
  assert.match(none.stderr, 'Usage: sessiond');
  const unknown = await runCli(['frobnicate']);
  assert.is(unknown.code, 2);
});

test.run();
