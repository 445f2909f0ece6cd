import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase } from '../../../src/storage/sqlite/database.ts';
import { migrate } from '../../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../../src/storage/sqlite/sqlite-event-log.ts';
import { eventLogContract } from '../../../src/testing/event-log-contract.ts';
import { draft, ev } from '../../../src/testing/fixtures.ts';
import { pack } from '../../../src/events/codec.ts';
import { tempDir } from '../../support/tmp.ts';

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
      for (const o of others) {
        await o.log.close();
        if (o.db.open) o.db.close();
      }
      tmp.remove();
    },
  };
}).run();

test('sqlite log - events stored before migration 8 read without committedAt; a database of schema 7 opens read-only', async () => {
  const tmp = tempDir();
  const file = tmp.file('v7.db');
  const db = openDatabase(file);
  migrate(db, { target: 7 }); // as written by schema 7: a row per event, no commit time
  db.prepare("INSERT INTO event (id, aggregate_id, seq, type, version, time, data) VALUES ('evt_old1', 'ses_old', 1, 'input.admitted', 1, 1000, ?)").run(
    pack({ inputId: 'in_1', prompt: 'x', delivery: 'queue', wake: false }),
  );
  db.close();
  const old = openDatabase(file, { readonly: true });
  const reader = new SqliteEventLog(old);
  const [event] = await reader.readSession('ses_old');
  assert.is(event!.time, 1000);
  assert.not.ok('committedAt' in event!, 'no commit time is invented');
  await reader.append('ses_old', 1, [draft(ev('input.admitted', { inputId: 'in_2', prompt: 'y' }))]).then(
    () => assert.unreachable('an older schema opened without migrating is read, not appended to'),
    (err: Error) => assert.match(err.message, /older schema .* sessiond migrate/),
  );
  await reader.close();
  old.close();
  tmp.remove();
});

test.run();
