// The SessionEraser contract on a SQLite file (the embedded engine's and `sessiond delete`'s eraser).
import { sqliteEraser } from '../../src/sessions/sqlite-eraser.ts';
import { deletionRecords } from '../../src/storage/sqlite/delete-session.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { sessionEraserContract } from '../../src/testing/session-eraser-contract.ts';
import { tempDir } from '../support/tmp.ts';

sessionEraserContract('sqlite', async (clock) => {
  const tmp = tempDir('sessiond-eraser-');
  const db = openDatabase(tmp.file('eraser.db'));
  migrate(db);
  return {
    log: new SqliteEventLog(db),
    eraser: sqliteEraser(db, clock),
    deletions: async () => deletionRecords(db, 1_000),
    cleanup: async () => {
      db.close();
      tmp.remove();
    },
  };
}).run();
