/**
 * Opening a file another process is converting to WAL: SQLite answers the switch with "database is
 * locked" at once, without its busy timeout, when another connection holds the write lock of a file
 * still in rollback mode (two workers starting together on a new file). openDatabase waits for it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { openDatabase } from '../../../src/storage/sqlite/database.ts';
import { tempDir } from '../../support/tmp.ts';

/** A thread that holds the write lock of `file` (in rollback mode) for `holdMs`, then commits and says when. */
const HOLDER = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.exec('BEGIN IMMEDIATE');
db.exec('CREATE TABLE other_process (a)');
parentPort.postMessage('held');
setTimeout(() => { db.exec('COMMIT'); db.close(); parentPort.postMessage({ released: Date.now() }); }, workerData.holdMs);
`;

async function holdWriteLock(file: string, holdMs: number): Promise<{ released: Promise<number> }> {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const thread = new Worker(HOLDER, { eval: true, workerData: { driver, file, holdMs } });
  const released = new Promise<number>((resolve, reject) => {
    thread.on('message', (m: unknown) => {
      if (typeof m === 'object' && m !== null && 'released' in m) resolve(Number(m.released));
    });
    thread.on('error', reject);
  });
  await new Promise<void>((resolve, reject) => {
    thread.once('message', (m) => (m === 'held' ? resolve() : reject(new Error(String(m)))));
    thread.once('error', reject);
  });
  return { released };
}

test('openDatabase - a new file whose write lock another connection holds: waits for it, then opens in WAL mode', async () => {
  const tmp = tempDir();
  const file = tmp.file('new.db');
  const holder = await holdWriteLock(file, 300);
  try {
    const db = openDatabase(file); // blocks this thread while the holder's thread runs on
    const opened = Date.now();
    assert.is(db.pragma('journal_mode', { simple: true }), 'wal');
    assert.ok(db.prepare("SELECT name FROM sqlite_master WHERE name = 'other_process'").get(), 'the other connection committed first');
    db.close();
    assert.ok((await holder.released) <= opened, 'opened only after the other connection let go');
  } finally {
    await holder.released.catch(() => undefined);
    tmp.remove();
  }
});

test('openDatabase - the write lock held past the busy timeout: a clear error naming the file and the timeout', async () => {
  const tmp = tempDir();
  const file = tmp.file('held.db');
  const holder = await holdWriteLock(file, 1_500);
  try {
    try {
      openDatabase(file, { busyTimeoutMs: 100 });
      assert.unreachable('opened while another connection held the write lock');
    } catch (err) {
      assert.instance(err, Error);
      const message = (err as Error).message;
      assert.match(message, file);
      assert.match(message, '100 ms');
      assert.match(message, /another process/);
    }
  } finally {
    await holder.released.catch(() => undefined);
    tmp.remove();
  }
});

test.run();
