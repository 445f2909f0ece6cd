/**
 * Embedded logs on one SQLite file in a temporary directory: each `open()` is a connection of its
 * own (another process, as far as SQLite can tell); `close()` closes every one and removes the
 * directory.
 *
 *   const file = logFile();
 *   const a = file.open(), b = file.open();
 *   ...
 *   await file.close();
 */
import { openDatabase, type Db } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog, type SqliteEventLogOptions } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { tempDir } from './tmp.ts';

export function logFile(options: SqliteEventLogOptions = {}) {
  const tmp = tempDir();
  const handles: { db: Db; log: SqliteEventLog }[] = [];
  return {
    open(): { db: Db; log: SqliteEventLog } {
      const db = openDatabase(tmp.file('log.db'));
      migrate(db);
      const handle = { db, log: new SqliteEventLog(db, options) };
      handles.push(handle);
      return handle;
    },
    async close(): Promise<void> {
      for (const h of handles) {
        await h.log.close();
        h.db.close();
      }
      tmp.remove();
    },
  };
}
