/**
 * `sessiond start --blob-grace-ms N --blob-sweep-ms N`, as a real process: bad values are refused
 * naming the flag; the worker's blob sweep runs at the interval given and removes a blob no event
 * references once older than the grace given (and says so); 0 turns the sweep off.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock } from '../../src/clock.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteBlobStore } from '../../src/storage/sqlite/sqlite-blob-store.ts';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

/** A blob no event references, stored `ageMs` ago, in a new file. */
async function fileWithOrphan(file: string, ageMs: number): Promise<string> {
  const db = openDatabase(file);
  try {
    migrate(db);
    const ref = await new SqliteBlobStore(db, new ManualClock(Date.now() - ageMs)).put(new TextEncoder().encode('left behind'), { mediaType: 'text/plain' });
    return ref.sha256;
  } finally {
    db.close();
  }
}

test('cli start - --blob-grace-ms and --blob-sweep-ms are refused when not whole numbers of ms (the grace above 0)', async () => {
  const tmp = tempDir();
  try {
    const db = tmp.file('bad.db');
    const zero = await runCli(['start', '--db', db, '--blob-grace-ms', '0']);
    assert.is(zero.code, 2, zero.stderr);
    assert.match(zero.stderr, '--blob-grace-ms must be a whole number > 0 (got "0")');
    const words = await runCli(['start', '--db', db, '--blob-sweep-ms', 'hourly']);
    assert.is(words.code, 2, words.stderr);
    assert.match(words.stderr, '--blob-sweep-ms must be a whole number >= 0 (got "hourly")');
  } finally {
    tmp.remove();
  }
});

test('cli start - the worker sweeps blobs every --blob-sweep-ms, removing those older than --blob-grace-ms; 0 turns it off', async () => {
  const tmp = tempDir();
  try {
    const db = tmp.file('sweep.db');
    const sha = await fileWithOrphan(db, 60_000);
    const off = startCli(['start', '--db', db, '--blob-grace-ms', '1000', '--blob-sweep-ms', '0']);
    await off.waitFor('Stop it with Ctrl-C');
    assert.match(off.output(), ', no blob sweep.');
    off.child.kill('SIGTERM');
    assert.is(await off.exited, 0);
    const kept = await runCli(['check', '--db', db, '--safety-only', '--blob-grace-ms', '1000']);
    assert.match(kept.stdout, `ORPHANED blob ${sha}`, 'no sweep ran');

    const worker = startCli(['start', '--db', db, '--blob-grace-ms', '30000', '--blob-sweep-ms', '100']);
    await worker.waitFor('blob sweep every 0.1 s (grace 30 s)');
    await worker.waitFor('blob sweep: checked 1 blob: 0 referenced; removed 1 unreferenced blob (11 bytes)');
    worker.child.kill('SIGTERM');
    assert.is(await worker.exited, 0);
    const after = await runCli(['check', '--db', db, '--safety-only', '--blob-grace-ms', '0']);
    assert.not.match(after.stdout, 'ORPHANED');
  } finally {
    tmp.remove();
  }
});

test.run();
