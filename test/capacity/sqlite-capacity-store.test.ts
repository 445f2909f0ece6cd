// The CapacityStore contract on the SQLite file an embedded deployment's workers share.
import { sqliteCapacityStore } from '../../src/capacity/sqlite-capacity-store.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { openDatabase, type Db } from '../../src/storage/sqlite/database.ts';
import { capacityStoreContract } from '../../src/testing/capacity-store-contract.ts';
import { tempDir } from '../support/tmp.ts';

capacityStoreContract('sqlite, one connection per store on one file', async () => {
  const tmp = tempDir();
  const dbs: Db[] = [];
  return {
    open: async () => {
      const db = openDatabase(tmp.file('capacity.db'));
      migrate(db);
      dbs.push(db);
      return sqliteCapacityStore(db);
    },
    cleanup: async () => {
      for (const db of dbs) db.close();
      tmp.remove();
    },
  };
}).run();
