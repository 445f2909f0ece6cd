/**
 * A read of a session after the sequence this connection last committed for it is answered without
 * a query (SqliteEventLog's `tails`), and only while no other connection has committed since: what
 * another process, or another log on the same connection, appended in between is always read.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { migrate } from '../../src/storage/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite-event-log.ts';
import { draft, ev } from '../../src/testing/fixtures.ts';
import { tempDir } from '../support/tmp.ts';

function open(file: string) {
  const db = openDatabase(file);
  migrate(db);
  return { db, log: new SqliteEventLog(db) };
}

const admitted = (n: number) => draft(ev('input.admitted', { inputId: `inp_t${n}`, prompt: `p${n}` }));

test('known tail - a read after our own last commit needs no query, and nothing is missed', async () => {
  const tmp = tempDir();
  const a = open(tmp.file('t.db'));
  await a.log.append('ses_t', 0, [admitted(1), admitted(2)]);
  assert.equal(await a.log.readSession('ses_t', { afterSeq: 2 }), []);
  assert.is(a.log.stats.knownTail, 1);
  assert.is((await a.log.readSession('ses_t', { afterSeq: 1 })).length, 1, 'a read from an older sequence queries');
  assert.is((await a.log.readSession('ses_t')).length, 2);
  assert.is(a.log.stats.knownTail, 1);
  await a.log.close();
  a.db.close();
  tmp.remove();
});

test("known tail - another process's commit to the session is read", async () => {
  const tmp = tempDir();
  const a = open(tmp.file('t.db'));
  const b = open(tmp.file('t.db'));
  await a.log.append('ses_t', 0, [admitted(1)]);
  await b.log.append('ses_t', 1, [admitted(2)]);
  const after = await a.log.readSession('ses_t', { afterSeq: 1 });
  assert.equal(
    after.map((e) => e.seq),
    [2],
  );
  // and a commit of another connection to some other session also ends the shortcut (it cannot tell which)
  await a.log.append('ses_t', 2, [admitted(3)]);
  await b.log.append('ses_other', 0, [admitted(4)]);
  assert.equal(await a.log.readSession('ses_t', { afterSeq: 3 }), []);
  assert.is(a.log.stats.knownTail, 0);
  for (const h of [a, b]) {
    await h.log.close();
    h.db.close();
  }
  tmp.remove();
});

test('known tail - another log on the same connection (which leaves data_version alone) is seen', async () => {
  const tmp = tempDir();
  const a = open(tmp.file('t.db'));
  const second = new SqliteEventLog(a.db);
  await a.log.append('ses_t', 0, [admitted(1)]);
  await second.append('ses_t', 1, [admitted(2)]);
  assert.equal(
    (await a.log.readSession('ses_t', { afterSeq: 1 })).map((e) => e.seq),
    [2],
  );
  await second.close();
  await a.log.close();
  a.db.close();
  tmp.remove();
});

test('known tail - a failed append leaves the tail where the last commit put it', async () => {
  const tmp = tempDir();
  const a = open(tmp.file('t.db'));
  const b = open(tmp.file('t.db'));
  await a.log.append('ses_t', 0, [admitted(1)]);
  await b.log.append('ses_t', 1, [admitted(2)]);
  await a.log.append('ses_t', 1, [admitted(3)]).then(
    () => assert.unreachable('the append at a stale sequence conflicts'),
    (err: Error) => assert.match(err.message, /expected|sequence/i),
  );
  assert.equal(
    (await a.log.readSession('ses_t', { afterSeq: 1 })).map((e) => e.seq),
    [2],
  );
  for (const h of [a, b]) {
    await h.log.close();
    h.db.close();
  }
  tmp.remove();
});

test.run();
