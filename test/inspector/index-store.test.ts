// The InspectorIndexStore contract against the memory index and the SQLite tables beside the log,
// and what the SQLite index does with a write the file refuses.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { initialSnapshot } from '../../src/machines/decider.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { MemoryInspectorIndex } from '../../src/inspector/index-store.ts';
import { SqliteInspectorIndex } from '../../src/inspector/sqlite-index.ts';
import { inspectorIndexContract } from '../../src/testing/inspector-index-contract.ts';
import { tempDir } from '../support/tmp.ts';

inspectorIndexContract('memory', async () => ({
  index: new MemoryInspectorIndex(),
  reopen: () => undefined,
  otherVersion: () => undefined,
  cleanup: async () => undefined,
})).run();

inspectorIndexContract('sqlite', async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('index.db'));
  migrate(db);
  return {
    index: new SqliteInspectorIndex(db),
    reopen: () => new SqliteInspectorIndex(db),
    otherVersion: () => new SqliteInspectorIndex(db, 'another-fold'),
    cleanup: async () => {
      db.close();
      tmp.remove();
    },
  };
}).run();

inspectorIndexContract('sqlite, read-only', async () => {
  const tmp = tempDir();
  const file = tmp.file('index.db');
  const writer = openDatabase(file);
  migrate(writer);
  const reader = openDatabase(file, { readonly: true });
  return {
    // what a worker's inspector wrote is read; what this one makes stays in its memory
    index: new SqliteInspectorIndex(reader),
    reopen: () => undefined,
    otherVersion: () => undefined,
    cleanup: async () => {
      reader.close();
      writer.close();
      tmp.remove();
    },
  };
}).run();

test('sqlite index - a write the file refuses is kept in memory and told, and the inspector goes on', () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('refusing.db'));
  try {
    migrate(db);
    const told: unknown[] = [];
    const index = new SqliteInspectorIndex(db, undefined, (err) => told.push(err));
    db.pragma('query_only = ON'); // every write now fails, as on a file that is busy or full
    const snapshot = { ...initialSnapshot('ses_refused'), context: { ...initialSnapshot('ses_refused').context, seq: 1_000 } };
    index.putCheckpoints([snapshot]);
    const mark = { seq: 250, eventId: 'evt_250', time: 1, first: 3, rows: { inputs: 1, messages: 2, recoveries: 0 } };
    index.putMarks('ses_refused', [mark]);
    assert.is(told.length, 2, 'each refused write is told');
    assert.match(String(told[0]), /readonly|query_only/i);
    assert.equal(index.checkpointAt('ses_refused', 1_500), snapshot, 'the checkpoint is kept in memory');
    assert.equal(index.marksOf('ses_refused'), [mark], 'the mark too');
    db.pragma('query_only = OFF');
    assert.is(db.prepare('SELECT COUNT(*) FROM inspector_checkpoint').pluck().get(), 0, 'nothing reached the file');
  } finally {
    db.close();
    tmp.remove();
  }
});

test.run();
