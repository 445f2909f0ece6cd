/**
 * WAL checkpoints run on the checkpoint thread, not inside the commits of the writing connection:
 * while the thread runs, the writer's automatic checkpoints are off and the thread still moves the
 * WAL into the database file (the WAL does not grow without bound); when the thread cannot run,
 * automatic checkpoints stay on and the failure is reported. The engine uses it for its file.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { renameSync, statSync } from 'node:fs';
import { openDatabase } from '../../../src/storage/sqlite/database.ts';
import { migrate } from '../../../src/storage/sqlite/migrate.ts';
import { startCheckpointer } from '../../../src/storage/sqlite/checkpointer.ts';
import { openEngine } from '../../../src/engine.ts';
import { echoRunner } from '../../../src/runner/echo.ts';
import { waitFor } from '../../../src/testing/wait.ts';
import { tempDir } from '../../support/tmp.ts';

const autocheckpoint = (db: ReturnType<typeof openDatabase>) => db.pragma('wal_autocheckpoint', { simple: true }) as number;

/** Writes `rows` rows of 2 kB in transactions of 50 (about a page per row). */
function write(db: ReturnType<typeof openDatabase>, rows: number): void {
  db.exec('CREATE TABLE IF NOT EXISTS blob (id INTEGER PRIMARY KEY, data BLOB)');
  const insert = db.prepare('INSERT INTO blob (data) VALUES (?)');
  const batch = db.transaction((n: number) => {
    for (let i = 0; i < n; i++) insert.run(Buffer.alloc(2000, i % 251));
  });
  for (let done = 0; done < rows; done += 50) batch(50);
}

test('the writer does not checkpoint on commit while the thread runs, and the thread moves the WAL into the file', async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('c.db'));
  try {
    assert.is(autocheckpoint(db), 1000, "SQLite's default before the thread starts");
    const checkpointer = startCheckpointer(db, { intervalMs: 5 })!;
    await waitFor(() => autocheckpoint(db) === 0, { what: "the writer's automatic checkpoints to be turned off" });
    const before = statSync(tmp.file('c.db')).size;
    write(db, 3000); // ~3,000 pages: the writer alone would have checkpointed twice on commit
    await waitFor(() => statSync(tmp.file('c.db')).size > before + 3000 * 2000, {
      what: 'the checkpoint thread to copy the WAL into the database file',
      timeoutMs: 20_000,
    });
    assert.ok(checkpointer.stats.checkpoints > 0);
    await checkpointer.close();
    assert.is(autocheckpoint(db), 1000, 'automatic checkpoints come back when the thread stops');
    assert.is(db.prepare('SELECT COUNT(*) FROM blob').pluck().get(), 3000);
  } finally {
    db.close();
    tmp.remove();
  }
});

test('a thread that cannot open the database reports it, and the writer keeps checkpointing on commit', async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('moved.db'));
  try {
    db.exec('CREATE TABLE t (x)');
    renameSync(tmp.file('moved.db'), tmp.file('elsewhere.db')); // the writer keeps its handle; the path is gone
    const errors: Error[] = [];
    const checkpointer = startCheckpointer(db, { onError: (err) => errors.push(err) })!;
    await waitFor(() => errors.length > 0, { what: 'the thread to report its failure' });
    assert.match(errors[0]!.message, /checkpoint thread of .*moved\.db failed/);
    assert.match(errors[0]!.message, /checkpoints on commit again/);
    assert.is(autocheckpoint(db), 1000);
    await checkpointer.close();
  } finally {
    db.close();
    tmp.remove();
  }
});

test('no thread for an in-memory database', () => {
  const db = openDatabase(':memory:');
  assert.is(startCheckpointer(db), undefined);
  db.close();
});

test('the engine checkpoints on the thread and gives the file back whole at close', async () => {
  const tmp = tempDir();
  const engine = await openEngine({ file: tmp.file('e.db'), runner: echoRunner() });
  try {
    await waitFor(() => autocheckpoint(engine.db) === 0, { what: "the engine's writer to leave checkpoints to the thread" });
    for (let i = 0; i < 20; i++) {
      await engine.admit(`ses_ck${i}`, { prompt: `hello ${i}` });
      await engine.awaitIdle(`ses_ck${i}`);
    }
  } finally {
    await engine.close();
  }
  const reopened = openDatabase(tmp.file('e.db'));
  migrate(reopened);
  assert.is(reopened.prepare("SELECT COUNT(DISTINCT aggregate_id) FROM event_batch WHERE aggregate_id LIKE 'ses_ck%'").pluck().get(), 20);
  reopened.close();
  tmp.remove();
});

test.run();
