/**
 * A read of a session after the sequence this connection last committed for it is answered without
 * a query (SqliteEventLog's `tails`), and only while no other connection has committed since: what
 * another process, or another log on the same connection, appended in between is always read.
 * The same for an append: one expecting that sequence writes without reading the session's last
 * append (its sequence and ids), and one
 * after another connection's commit, or after a deletion on this one, reads it (and conflicts when stale).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SqliteEventLog } from '../../../src/storage/sqlite/sqlite-event-log.ts';
import { deleteSessionData } from '../../../src/storage/sqlite/delete-session.ts';
import type { Db } from '../../../src/storage/sqlite/database.ts';
import { draft, ev } from '../../../src/testing/fixtures.ts';
import { logFile } from '../../support/log-files.ts';

const admitted = (n: number) => draft(ev('input.admitted', { inputId: `inp_t${n}`, prompt: `p${n}` }));

test('known tail - a read after our own last commit needs no query, and nothing is missed', async () => {
  const file = logFile();
  const a = file.open();
  await a.log.append('ses_t', 0, [admitted(1), admitted(2)]);
  assert.equal(await a.log.readSession('ses_t', { afterSeq: 2 }), []);
  assert.is(a.log.stats.knownTail, 1);
  assert.is((await a.log.readSession('ses_t', { afterSeq: 1 })).length, 1, 'a read from an older sequence queries');
  assert.is((await a.log.readSession('ses_t')).length, 2);
  assert.is(a.log.stats.knownTail, 1);
  await file.close();
});

test("known tail - another process's commit to the session is read", async () => {
  const file = logFile();
  const a = file.open();
  const b = file.open();
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
  await file.close();
});

test('known tail - another log on the same connection (which leaves data_version alone) is seen', async () => {
  const file = logFile();
  const a = file.open();
  const second = new SqliteEventLog(a.db);
  await a.log.append('ses_t', 0, [admitted(1)]);
  await second.append('ses_t', 1, [admitted(2)]);
  assert.equal(
    (await a.log.readSession('ses_t', { afterSeq: 1 })).map((e) => e.seq),
    [2],
  );
  await second.close();
  await file.close();
});

test('known tail - a failed append leaves the tail where the last commit put it', async () => {
  const file = logFile();
  const a = file.open();
  const b = file.open();
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
  await file.close();
});

/** A log on `db` and how many times its appends read a session's last append from the file. */
function countingLog(db: Db): { log: SqliteEventLog; seqReads: () => number } {
  const log = new SqliteEventLog(db);
  return { log, seqReads: () => log.stats.seqReads };
}

test("known tail - appends after this connection's own commits read no sequence from the file", async () => {
  const file = logFile();
  const { log, seqReads } = countingLog(file.open().db);
  for (let seq = 0; seq < 6; seq++) await log.append('ses_t', seq, [admitted(seq)]);
  assert.is(seqReads(), 1, 'only the first append (no tail yet) reads the last append');
  // two appends of the session in one group: the second knows the first's sequence
  await Promise.all([log.append('ses_u', 0, [admitted(10)]), log.append('ses_u', 1, [admitted(11)])]);
  assert.is(seqReads(), 2);
  assert.equal(
    (await log.readSession('ses_u')).map((e) => e.seq),
    [1, 2],
  );
  await log.close();
  await file.close();
});

test("known tail - after another connection's commit an append reads the sequence: a stale one conflicts, a current one lands", async () => {
  const file = logFile();
  const a = file.open();
  const { log, seqReads } = countingLog(a.db);
  const b = file.open();
  await log.append('ses_t', 0, [admitted(1)]);
  await b.log.append('ses_other', 0, [admitted(2)]); // another session: data_version moves all the same
  await log.append('ses_t', 1, [admitted(3)]);
  assert.is(seqReads(), 2, 'read again after the other connection committed');
  await b.log.append('ses_t', 2, [admitted(4)]);
  await log.append('ses_t', 2, [admitted(5)]).then(
    () => assert.unreachable('our tail is stale: the append conflicts'),
    (err: Error) => assert.match(err.message, /sequence/i),
  );
  await log.append('ses_t', 3, [admitted(6)]);
  assert.equal(
    (await a.log.readSession('ses_t')).map((e) => e.seq),
    [1, 2, 3, 4],
  );
  await log.close();
  await file.close();
});

test('known tail - a session deleted on this connection starts again from 0, and an append expecting its old tail conflicts', async () => {
  const file = logFile();
  const a = file.open();
  await a.log.append('ses_t', 0, [admitted(1), admitted(2)]);
  deleteSessionData(a.db, 'ses_t', { now: 1, by: 'test' });
  await a.log.append('ses_t', 2, [admitted(3)]).then(
    () => assert.unreachable('the session was deleted: nothing is at sequence 2'),
    (err: Error) => assert.match(err.message, /sequence/i),
  );
  await a.log.append('ses_t', 0, [admitted(4)]);
  assert.equal(
    (await a.log.readSession('ses_t')).map((e) => e.seq),
    [1],
  );
  await file.close();
});

test.run();
