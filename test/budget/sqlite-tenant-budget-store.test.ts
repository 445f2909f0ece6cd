// The TenantBudgetStore contract on the SQLite file an embedded deployment's workers share.
import { sqliteTenantBudgetStore } from '../../src/budget/sqlite-tenant-budget-store.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { openDatabase, type Db } from '../../src/storage/sqlite/database.ts';
import { tenantBudgetStoreContract } from '../../src/testing/tenant-budget-store-contract.ts';
import { tempDir } from '../support/tmp.ts';

tenantBudgetStoreContract('sqlite, one connection per store on one file', async () => {
  const tmp = tempDir();
  const dbs: Db[] = [];
  return {
    open: async () => {
      const db = openDatabase(tmp.file('budgets.db'));
      migrate(db);
      dbs.push(db);
      return sqliteTenantBudgetStore(db);
    },
    cleanup: async () => {
      for (const db of dbs) db.close();
      tmp.remove();
    },
  };
}).run();
