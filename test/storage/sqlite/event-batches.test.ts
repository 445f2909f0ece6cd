/**
 * One row per append (schema 22, src/storage/sqlite/event-rows.ts): an append of n events is one row
 * of `event_batch`, each event keeping a position of its own; reads split a row wherever a position
 * or a limit falls; positions are never handed out twice (a deleted newest session's neither, nor
 * one deleted before the file was migrated); ids reused from earlier appends are refused; a reader
 * that opened the file before a newer process migrated it reads on. The first, second and last fail
 * on the layout before (a row per event, no `event_batch`); the ids and the reader that reads on are
 * what the old layout gave and the new one must keep.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode, isSessiondError } from '../../../src/errors.ts';
import { openDatabase } from '../../../src/storage/sqlite/database.ts';
import { deleteSessionData } from '../../../src/storage/sqlite/delete-session.ts';
import { eventImporter } from '../../../src/storage/sqlite/import-events.ts';
import { migrate } from '../../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../../src/storage/sqlite/sqlite-event-log.ts';
import { committed, draft, ev } from '../../../src/testing/fixtures.ts';
import { pack, unpack } from '../../../src/events/codec.ts';
import { type Frame, packFrames } from '../../../src/storage/sqlite/event-rows.ts';
import { logFile } from '../../support/log-files.ts';
import { tempDir } from '../../support/tmp.ts';

const admitted = (n: number, id?: string) => draft(ev('input.admitted', { inputId: `inp_b${n}`, prompt: `p${n}` }), id ? { id } : {});
const rowCount = (db: ReturnType<typeof openDatabase>) => db.prepare('SELECT COUNT(*) FROM event_batch').pluck().get() as number;

test('event batches - an append is one row; its events keep a position each, and reads split the row at any position or limit', async () => {
  const file = logFile();
  const { db, log } = file.open();
  const a = await log.append('ses_a', 0, [admitted(1), admitted(2), admitted(3)]);
  const b = await log.append('ses_b', 0, [admitted(4), admitted(5)]);
  assert.is(rowCount(db), 2, 'two appends, two rows');
  assert.equal(
    [...a, ...b].map((e) => e.position),
    [1, 2, 3, 4, 5],
  );
  assert.equal(
    (await log.readAll({ after: 2 })).map((e) => [e.sessionId, e.seq, e.position]),
    [
      ['ses_a', 3, 3],
      ['ses_b', 1, 4],
      ['ses_b', 2, 5],
    ],
  );
  assert.equal(
    (await log.readAll({ after: 1, limit: 2 })).map((e) => e.position),
    [2, 3],
  );
  assert.equal(
    (await log.readSession('ses_a', { afterSeq: 1, limit: 1 })).map((e) => e.seq),
    [2],
  );
  assert.is(await log.head(), 5);
  assert.is(await log.lastSeq('ses_a'), 3);
  // what another process reads from the file: the same events
  const other = file.open();
  assert.equal(
    (await other.log.readAll()).map((e) => [e.id, e.position, e.seq]),
    [...a, ...b].map((e) => [e.id, e.position, e.seq]),
  );
  await file.close();
});

test('event batches - positions are never handed out twice: not after the newest session is deleted, nor after a migration from a row per event', async () => {
  const file = logFile();
  const { db, log } = file.open();
  await log.append('ses_keep', 0, [admitted(1)]);
  await log.append('ses_gone', 0, [admitted(2), admitted(3)]);
  deleteSessionData(db, 'ses_gone', { now: 1, by: 'test' });
  const [next] = await log.append('ses_keep', 1, [admitted(4)]);
  assert.is(next!.position, 4, 'past the deleted positions 2 and 3');
  await file.close();

  const tmp = tempDir();
  const old = openDatabase(tmp.file('v21.db'));
  migrate(old, { target: 21 });
  const insert = old.prepare(
    "INSERT INTO event (id, aggregate_id, seq, type, version, time, data, committed_at) VALUES (?, ?, 1, 'input.admitted', 1, 1, ?, 1)",
  );
  const data = pack({ inputId: 'inp_old', prompt: 'x', delivery: 'queue', wake: false });
  for (const [id, session] of [
    ['evt_o1', 'ses_old'],
    ['evt_o2', 'ses_newest'],
  ] as const)
    insert.run(id, session, data);
  old.prepare("DELETE FROM event WHERE aggregate_id = 'ses_newest'").run(); // position 2 was handed out
  migrate(old);
  const upgraded = new SqliteEventLog(old);
  assert.equal(
    (await upgraded.readAll()).map((e) => [e.id, e.position]),
    [['evt_o1', 1]],
  );
  const [after] = await upgraded.append('ses_new', 0, [admitted(5)]);
  assert.is(after!.position, 3);
  await upgraded.close();
  old.close();
  tmp.remove();
});

test("event batches - reused ids are refused: the session's last append's, any earlier append's first; the same append again is its retry", async () => {
  const file = logFile();
  const { log } = file.open();
  const first = await log.append('ses_i', 0, [admitted(1, 'evt_i1'), admitted(2, 'evt_i2')]);
  await log.append('ses_i', 2, [admitted(3, 'evt_i3'), admitted(4, 'evt_i4')]);
  const refused = async (p: Promise<unknown>, why: string) => {
    const err = await p.then(
      () => undefined,
      (e) => e,
    );
    assert.ok(isSessiondError(err, ErrorCode.DuplicateEvent), `${why}: ${String(err)}`);
  };
  await refused(log.append('ses_i', 4, [admitted(5), admitted(6, 'evt_i4')]), "an id of the session's last append");
  await refused(log.append('ses_j', 0, [admitted(7, 'evt_i1')]), "another append's first id, even in another session");
  await refused(log.append('ses_i', 4, [admitted(8, 'evt_x'), admitted(9, 'evt_x')]), 'an id twice in one append');
  const again = await log.append('ses_i', 0, [admitted(1, 'evt_i1'), admitted(2, 'evt_i2')]);
  assert.equal(
    again.map((e) => [e.id, e.seq, e.position]),
    first.map((e) => [e.id, e.seq, e.position]),
    'a retry gets what was written',
  );
  assert.is(await log.lastSeq('ses_i'), 4);
  assert.is(await log.lastSeq('ses_j'), 0);
  await file.close();
});

test('event batches - a log opened on a file of an older schema reads on after another process migrates the file', async () => {
  const tmp = tempDir();
  const path = tmp.file('moving.db');
  const old = openDatabase(path);
  migrate(old, { target: 21 });
  old
    .prepare("INSERT INTO event (id, aggregate_id, seq, type, version, time, data, committed_at) VALUES ('evt_m1', 'ses_m', 1, 'input.admitted', 1, 1, ?, 1)")
    .run(pack({ inputId: 'inp_m', prompt: 'x', delivery: 'queue', wake: false }));
  const reader = new SqliteEventLog(old);
  assert.is((await reader.readSession('ses_m')).length, 1);
  const newer = openDatabase(path);
  migrate(newer); // a newer worker upgrades the file
  const writer = new SqliteEventLog(newer);
  await writer.append('ses_m', 1, [admitted(2)]);
  assert.equal(
    (await reader.readSession('ses_m')).map((e) => e.seq),
    [1, 2],
  );
  assert.is(await reader.head(), 2);
  await writer.close();
  await reader.close();
  newer.close();
  old.close();
  tmp.remove();
});

test("event batches - an import stores each run of a session's events committed together as one row", () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('import.db'));
  migrate(db);
  const at = (sessionId: string, seq: number, committedAt: number) =>
    committed(ev('input.admitted', { inputId: `inp_${sessionId}_${seq}`, prompt: 'x' }), { sessionId, seq, time: committedAt, committedAt });
  const imported = eventImporter(db)([at('ses_x', 1, 10), at('ses_x', 2, 10), at('ses_y', 1, 10), at('ses_x', 3, 11), at('ses_x', 4, 11)]);
  assert.equal(
    imported.map((e) => e.position),
    [1, 2, 3, 4, 5],
  );
  assert.is(rowCount(db), 3);
  const log = new SqliteEventLog(db);
  assert.equal(
    log.readSessionSync('ses_x').map((e) => [e.seq, e.position, e.committedAt]),
    [
      [1, 1, 10],
      [2, 2, 10],
      [3, 4, 11],
      [4, 5, 11],
    ],
  );
  db.close();
  tmp.remove();
});

test('event batches - an import of an id the file holds already is refused with duplicate_event, naming the event; nothing of the call is kept', () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('import-dup.db'));
  migrate(db);
  const importEvents = eventImporter(db);
  const first = committed(ev('input.admitted', { inputId: 'inp_1', prompt: 'x' }), { sessionId: 'ses_a', seq: 1, time: 10, committedAt: 10 });
  importEvents([first]);
  const again = {
    ...committed(ev('input.admitted', { inputId: 'inp_2', prompt: 'y' }), { sessionId: 'ses_b', seq: 1, time: 11, committedAt: 11 }),
    id: first.id,
  };
  const fresh = committed(ev('input.admitted', { inputId: 'inp_3', prompt: 'z' }), { sessionId: 'ses_c', seq: 1, time: 11, committedAt: 11 });
  const err = (() => {
    try {
      importEvents([fresh, again]);
    } catch (e) {
      return e;
    }
    throw new Error('expected the import to be refused');
  })();
  assert.ok(isSessiondError(err), String(err));
  assert.is(err.code, ErrorCode.DuplicateEvent);
  assert.match(err.message, `Cannot import event ${first.id} (session ses_b, sequence 1)`);
  assert.match(err.message, 'replay into a fresh database');
  assert.is(rowCount(db), 1, 'the call is one transaction: the fresh event before it is not kept either');
  db.close();
  tmp.remove();
});

test('event batches - the frames are written as plain msgpack: every length and number form reads back exactly', () => {
  const strings = ['', 'a'.repeat(31), 'b'.repeat(32), 'c'.repeat(255), 'd'.repeat(256), 'e'.repeat(70_000), 'ünï€😀'];
  const numbers = [0, 1, 127, 128, 255, 256, 65_535, 65_536, 2 ** 32 - 1, 2 ** 32, 1_765_000_000_000, Number.MAX_SAFE_INTEGER];
  const datas = [0, 1, 255, 256, 65_535, 65_536].map((n) => new Uint8Array(n).fill(7));
  const frames: Frame[] = [];
  for (let i = 0; i < Math.max(strings.length, numbers.length, datas.length); i++) {
    frames.push([
      strings[i % strings.length]!,
      strings[(i + 3) % strings.length]!,
      numbers[(i + 5) % numbers.length]!,
      numbers[i % numbers.length]!,
      datas[i % datas.length]!,
    ]);
  }
  for (const n of [1, 15, 16, 12]) {
    const some = frames.slice(0, n);
    const back = unpack(packFrames(some)) as unknown[][];
    assert.is(back.length, some.length);
    back.forEach((f, i) => {
      assert.equal(f.slice(0, 4), some[i]!.slice(0, 4), `frame ${i} of ${n}`);
      assert.ok(Buffer.from(f[4] as Uint8Array).equals(Buffer.from(some[i]![4])), `frame ${i} of ${n}: the payload bytes`);
    });
  }
  const many = Array.from({ length: 70_000 }, (_, i): Frame => [`evt_${i}`, 't', 1, i, new Uint8Array([0x80])]);
  assert.is((unpack(packFrames(many)) as unknown[]).length, 70_000, 'an array over 65,535 frames');
  assert.throws(() => packFrames([['evt_x', 't', -1, 0, new Uint8Array()]]), /whole number >= 0/);
});

test.run();
