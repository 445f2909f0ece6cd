import { openDatabase } from '../../src/storage/sqlite.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite-event-log.ts';
import { eventLogContract } from '../../src/testing/event-log-contract.ts';
import { tempDir } from '../support/tmp.ts';

eventLogContract('sqlite', async () => {
  const tmp = tempDir();
  const file = tmp.file('log.db');
  const db = openDatabase(file);
  migrate(db);
  const log = new SqliteEventLog(db);
  const others: { db: ReturnType<typeof openDatabase>; log: SqliteEventLog }[] = [];
  return {
    log,
    another: async () => {
      const db2 = openDatabase(file);
      const log2 = new SqliteEventLog(db2);
      others.push({ db: db2, log: log2 });
      return log2;
    },
    cleanup: async () => {
      await log.close();
      db.close();
      for (const o of others) { await o.log.close(); if (o.db.open) o.db.close(); }
      tmp.remove();
    },
  };
}).run();
