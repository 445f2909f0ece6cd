/**
 * Group commit in the embedded log: appends from many sessions that arrive together are written in
 * one transaction, each still checked against its own expected sequence; a conflict or a reused id
 * fails only its own append (its rows undone), and a locked database fails the whole group with
 * nothing written.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { openDatabase } from '../../../src/storage/sqlite/database.ts';
import { migrate } from '../../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../../src/storage/sqlite/sqlite-event-log.ts';
import { ErrorCode, isSessiondError, isSequenceConflict } from '../../../src/errors.ts';
import { tempDir } from '../../support/tmp.ts';
import { draft, ev } from '../../../src/testing/fixtures.ts';

let n = 0;
const admitted = (id = `evt_g${++n}`) => draft(ev('input.admitted', { inputId: `inp_${id}`, prompt: 'p', delivery: 'queue', wake: false }), { id, time: 1 });

function open(busyTimeoutMs?: number) {
  const tmp = tempDir();
  const file = tmp.file('group.db');
  const db = openDatabase(file, busyTimeoutMs === undefined ? {} : { busyTimeoutMs });
  migrate(db);
  return { tmp, file, db, log: new SqliteEventLog(db) };
}

test('group commit - 64 sessions appending together commit in one transaction, each at its own sequence', async () => {
  const { tmp, db, log } = open();
  const results = await Promise.all(Array.from({ length: 64 }, (_, i) => log.append(`ses_${i}`, 0, [admitted(), admitted()])));
  assert.equal(log.stats, { groups: 1, appends: 64, fromRecent: 0, knownTail: 0, seqReads: 64 });
  assert.ok(results.every((r) => r.length === 2 && r[0]!.seq === 1 && r[1]!.seq === 2));
  assert.is(await log.head(), 128);
  await log.close();
  db.close();
  tmp.remove();
});

test('group commit - a conflict or a reused id fails only its own append; the others, and later appends of the same session in the group, commit', async () => {
  const { tmp, db, log } = open();
  const taken = admitted('evt_taken');
  await log.append('ses_x', 0, [taken]);
  const before = log.stats.groups;
  const outcomes = await Promise.allSettled([
    log.append('ses_a', 0, [admitted()]), // ok
    log.append('ses_b', 5, [admitted()]), // stale expectation: conflict
    log.append('ses_c', 0, [admitted('evt_taken'), admitted()]), // an earlier append's first id reused: refused whole
    log.append('ses_a', 1, [admitted()]), // sees the first append of its session in the same group
  ]);
  assert.is(log.stats.groups, before + 1, 'one transaction');
  assert.equal(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'rejected', 'fulfilled'],
  );
  assert.ok(isSequenceConflict((outcomes[1] as PromiseRejectedResult).reason));
  assert.ok(isSessiondError((outcomes[2] as PromiseRejectedResult).reason, ErrorCode.DuplicateEvent));
  assert.is(await log.lastSeq('ses_a'), 2);
  assert.is(await log.lastSeq('ses_b'), 0);
  assert.is(await log.lastSeq('ses_c'), 0, 'nothing of the refused append was written');
  await log.close();
  db.close();
  tmp.remove();
});

test('group commit - a database locked past the busy timeout fails the whole group, writes nothing, and the next group commits', async () => {
  const { tmp, file, db, log } = open(20);
  const holder = new Database(file);
  holder.exec('BEGIN IMMEDIATE');
  const outcomes = await Promise.allSettled([log.append('ses_l1', 0, [admitted()]), log.append('ses_l2', 0, [admitted()])]);
  assert.equal(
    outcomes.map((o) => o.status),
    ['rejected', 'rejected'],
  );
  assert.match(String((outcomes[0] as PromiseRejectedResult).reason), 'database is locked');
  holder.exec('ROLLBACK');
  holder.close();
  assert.is(await log.head(), 0, 'nothing written');
  await log.append('ses_l1', 0, [admitted()]);
  assert.is(await log.lastSeq('ses_l1'), 1);
  await log.close();
  db.close();
  tmp.remove();
});

test('group commit - close writes the appends already accepted', async () => {
  const { tmp, db, log } = open();
  const pending = log.append('ses_close', 0, [admitted()]);
  await log.close();
  db.close(); // at once: a write left for the next turn of the event loop would find the database closed
  assert.is((await pending)[0]!.seq, 1);
  tmp.remove();
});

test.run();
