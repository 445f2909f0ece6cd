// The InspectorIndexStore contract against the memory index and the SQLite tables beside the log.
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
