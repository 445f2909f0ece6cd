// The SnapshotStore contract against the SQLite table beside the embedded log.
import { openDatabase } from '../../../src/storage/sqlite/database.ts';
import { migrate } from '../../../src/storage/sqlite/migrate.ts';
import { SqliteSnapshotStore } from '../../../src/storage/sqlite/sqlite-snapshot-store.ts';
import { systemClock } from '../../../src/clock.ts';
import { snapshotStoreContract } from '../../../src/testing/snapshot-store-contract.ts';
import { tempDir } from '../../support/tmp.ts';

snapshotStoreContract('sqlite', async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('snapshots.db'));
  migrate(db);
  return {
    store: new SqliteSnapshotStore(db, systemClock),
    otherVersion: async () => new SqliteSnapshotStore(db, systemClock, 'another-machine'),
    cleanup: async () => {
      db.close();
      tmp.remove();
    },
  };
}).run();
