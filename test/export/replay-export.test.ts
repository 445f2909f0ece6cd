/**
 * replayExport: one transaction per batch imports the events and folds them into the projection.
 * The result equals import + rebuildProjection (log rows and projection hash) on a real engine's
 * log, whole and filtered; and whatever stops it (a storage failure inside a batch's transaction, an
 * event the projector refuses, a damaged frame) leaves the log and the projection at the same prefix.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { ExportWriter, readExport } from '../../src/export/export-file.ts';
import { replayExport, type ReplayProgress } from '../../src/export/replay-export.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { ErrorCode, CorruptExportError } from '../../src/errors.ts';
import { Projector } from '../../src/projector/projector.ts';
import { projectionHash, rebuildProjection } from '../../src/projector/rebuild.ts';
import { eventImporter } from '../../src/storage/sqlite/import-events.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import type { Db } from '../../src/storage/sqlite/database.ts';
import { engineLog } from '../projector/engine-log.ts';
import { memoryDb } from '../projector/support.ts';
import { expectCode, stream } from '../../src/testing/fixtures.ts';
import { tempDir } from '../support/tmp.ts';
import { storedEventRows } from '../support/stored-events.ts';

const log = await engineLog();

async function exportOf(events: readonly SessionEvent[]) {
  const tmp = tempDir();
  const file = tmp.file('log.sdx');
  const w = await ExportWriter.create(file, { created: 1, source: 'test', events: events.length });
  await w.write(events.map(({ position: _p, ...e }) => e as SessionEvent));
  await w.close();
  return { tmp, file };
}

/** The reference, as replay worked before: the file's events (the first `count` kept) imported, then the projection rebuilt. */
async function importAndRebuild(file: string, count = Infinity, keep: (e: SessionEvent) => boolean = () => true): Promise<Db> {
  const events: SessionEvent[] = [];
  await readExport(file, {
    onEvents: (batch) => {
      events.push(...batch.filter(keep));
    },
  }).catch((err: unknown) => {
    if (!(err instanceof CorruptExportError)) throw err;
  });
  const db = memoryDb();
  if (events.length) eventImporter(db)(events.slice(0, count));
  const sqliteLog = new SqliteEventLog(db);
  await rebuildProjection(db, sqliteLog);
  await sqliteLog.close();
  return db;
}

const eventRows = (db: Db) => storedEventRows(db);
const checkpoint = (db: Db) => new Projector(db).checkpoint();

function assertSame(db: Db, reference: Db, what: string) {
  assert.equal(eventRows(db), eventRows(reference), `${what}: the same log rows`);
  assert.is(projectionHash(db), projectionHash(reference), `${what}: the same projection`);
  assert.is(checkpoint(db), checkpoint(reference), `${what}: the same checkpoint`);
}

test('replay - one pass equals import + rebuildProjection on a real engine log, in any batch size', async () => {
  const { tmp, file } = await exportOf(log);
  const reference = await importAndRebuild(file);
  assert.is(checkpoint(reference), log.length);
  for (const batchSize of [1, 10, 1000]) {
    const db = memoryDb();
    const progress: ReplayProgress[] = [];
    const result = await replayExport(db, file, { batchSize, onProgress: (p) => progress.push(p) });
    assert.equal([result.read, result.imported, result.position, result.header.events], [log.length, log.length, log.length, log.length]);
    assertSame(db, reference, `batches of ${batchSize}`);
    assert.equal(progress.at(-1), {
      bytes: readFileSync(file).length,
      totalBytes: readFileSync(file).length,
      read: log.length,
      imported: log.length,
      position: log.length,
    });
  }
  tmp.remove();
});

test('replay - kept events only (one session, up to a sequence), as the CLI filters them', async () => {
  const { tmp, file } = await exportOf(log);
  const keep = (e: SessionEvent) => e.sessionId === 'ses_b' && e.seq <= 20;
  const db = memoryDb();
  const result = await replayExport(db, file, { keep, batchSize: 7 });
  assert.equal([result.read, result.imported], [log.length, 20]);
  assertSame(db, await importAndRebuild(file, Infinity, keep), 'filtered');
  tmp.remove();
});

test('replay - a storage failure inside a batch rolls back its import with its projection: log and projection stop at the same batch', async () => {
  const { tmp, file } = await exportOf(log);
  const db = memoryDb();
  const start = log.findIndex((e, i) => i >= 25 && e.type === 'step.started'); // its message is inserted by the batch holding it
  const { messageId } = log[start]!.payload as { messageId: string };
  db.exec(`CREATE TEMP TRIGGER boom BEFORE INSERT ON main.session_message WHEN NEW.id = '${messageId}'
           BEGIN SELECT RAISE(ABORT, 'simulated crash while writing'); END`);
  const committed = Math.floor(start / 10) * 10; // the whole batches of 10 before it
  await replayExport(db, file, { batchSize: 10 }).then(
    () => assert.unreachable('the trigger should stop it'),
    (err: Error) => assert.match(err.message, 'simulated crash while writing'),
  );
  db.exec('DROP TRIGGER temp.boom');
  assert.ok(committed >= 20, 'at least two batches were committed before');
  assertSame(db, await importAndRebuild(file, committed), 'after the crash');
  tmp.remove();
});

test('replay - an event the projector refuses stops the replay with its batch rolled back, log included', async () => {
  const s = stream();
  const events: SessionEvent[] = Array.from({ length: 25 }, (_, i) =>
    s.ev(`ses_${i}`, 'input.admitted', { inputId: `inp_${i}`, prompt: 'p', delivery: 'queue', wake: true }),
  );
  events.push(s.ev('ses_0', 'tool.started', { executionId: 'exe_none', messageId: 'msg_none', callId: 'call_none' }));
  const { tmp, file } = await exportOf(events);
  const db = memoryDb();
  await expectCode(replayExport(db, file, { batchSize: 10 }), ErrorCode.InconsistentStream);
  assertSame(db, await importAndRebuild(file, 20), 'after the refusal');
  tmp.remove();
});

test('replay - a damaged frame: everything before it is replayed, log and projection alike, then CorruptExportError', async () => {
  const { tmp, file } = await exportOf(log);
  const bytes = readFileSync(file);
  writeFileSync(file, bytes.subarray(0, bytes.length - 5));
  const db = memoryDb();
  const progress: ReplayProgress[] = [];
  const err = await replayExport(db, file, { batchSize: 10, onProgress: (p) => progress.push(p) }).catch((e: unknown) => e);
  assert.instance(err, CorruptExportError);
  assert.is((err as CorruptExportError).frame, log.length);
  assert.is(progress.at(-1)!.imported, log.length - 1, 'the progress says how many were replayed');
  assertSame(db, await importAndRebuild(file), 'before the damage');
  tmp.remove();
});

test('replay - the importer keeps no sequence from a transaction that rolled back', () => {
  const db = memoryDb();
  const importEvents = eventImporter(db);
  const [a, b, c] = log.filter((e) => e.sessionId === 'ses_a').slice(0, 3);
  assert.throws(
    () =>
      db
        .transaction(() => {
          importEvents([a!, b!]);
          throw new Error('the caller fails after the import');
        })
        .immediate(),
    /the caller fails/,
  );
  assert.equal(
    importEvents([a!]).map((e) => [e.id, e.position]),
    [[a!.id, 1]],
    'seq 1 again: the table is what counts',
  );
  assert.throws(() => importEvents([c!]), /session ses_a is at sequence 1 in the target database, the event has sequence 3/);
});

test('replay - each event keeps its original commit time: a replayed log audits like the original (late writes included)', async () => {
  const stamped = log.map((e, i) => ({ ...e, committedAt: 1_700_000_000_000 + i })) as SessionEvent[];
  const { tmp, file } = await exportOf(stamped);
  const db = memoryDb();
  await replayExport(db, file);
  const copy = new SqliteEventLog(db);
  const replayed = await copy.readAll();
  assert.equal(
    replayed.map((e) => e.committedAt),
    stamped.map((e) => e.committedAt),
  );
  await copy.close();
  tmp.remove();
});

test('replay - a database that holds a log is refused, and a stale projection is replaced', async () => {
  const { tmp, file } = await exportOf(log);
  const db = memoryDb();
  await replayExport(db, file);
  const err = await expectCode(replayExport(db, file), ErrorCode.InvalidOption);
  assert.match(err.message, `:memory: already holds an event log (up to position ${log.length}): replay into a fresh database file.`);
  const stale = memoryDb();
  new Projector(stale).apply([{ ...log[0]!, id: 'evt_stale', payload: { ...(log[0]!.payload as object), inputId: 'inp_stale' } } as SessionEvent]);
  await replayExport(stale, file);
  assertSame(stale, await importAndRebuild(file), 'over a stale projection');
  tmp.remove();
});

test.run();
