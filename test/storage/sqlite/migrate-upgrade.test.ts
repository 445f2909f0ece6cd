/**
 * Upgrades, not only fresh databases: each committed database of an earlier schema version (and of
 * the current one: upgraded by nothing, it must still match a fresh database)
 * (test/fixtures/schema, rows in every table it has) migrated to the latest has the fresh schema's
 * every named index with the same definition, the same tables and columns, its log byte for byte,
 * and a projection that refolds from the log equal to a rebuild.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { migrate, schemaVersion } from '../../../src/storage/sqlite/migrate.ts';
import { LATEST_SCHEMA_VERSION } from '../../../src/storage/sqlite/migrations/index.ts';
import { openDatabase, type Db } from '../../../src/storage/sqlite/database.ts';
import { SqliteEventLog } from '../../../src/storage/sqlite/sqlite-event-log.ts';
import { catchUpProjection } from '../../../src/projector/catch-up.ts';
import { projectionHash, rebuildProjection } from '../../../src/projector/rebuild.ts';
import { pack, unpack } from '../../../src/events/codec.ts';
import { listFromProjection } from '../../../src/sessions/list-projection.ts';
import { loadSchemaFixture, schemaFixtures } from '../../support/schema-fixtures.ts';
import { tempDir } from '../../support/tmp.ts';
import { storedEvents } from '../../../src/storage/sqlite/event-rows.ts';

const named = (db: Db) =>
  Object.fromEntries(
    (
      db.prepare("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name").all() as {
        name: string;
        tbl_name: string;
        sql: string;
      }[]
    ).map((i) => [i.name, { table: i.tbl_name, sql: i.sql.replace(/\s+/g, ' ').trim() }]),
  );
const shape = (db: Db) =>
  Object.fromEntries(
    (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all() as string[]).map((t) => [
      t,
      db.prepare(`PRAGMA table_info(${t})`).all(),
    ]),
  );
/** Every stored event, whichever layout the file has (a row each up to schema 21, batch rows after). */
const eventRows = (db: Db) =>
  storedEvents(db)
    .after(0, -1)
    .map((r) => [r.position, r.id, r.aggregate_id, r.seq, r.type, r.version, r.time, Buffer.from(r.data), r.committed_at ?? null]);

function freshSchema(dir: ReturnType<typeof tempDir>): Db {
  const db = openDatabase(dir.file('fresh.db'));
  migrate(db);
  return db;
}

test('migrate-upgrade - a committed fixture for every earlier schema version (and the current one, once written), each with rows in every table it has', () => {
  const versions = schemaFixtures().map((f) => f.version);
  assert.equal(
    versions.filter((v) => v < LATEST_SCHEMA_VERSION),
    Array.from({ length: LATEST_SCHEMA_VERSION - 1 }, (_, i) => i + 1),
    "every earlier schema has its fixture: before adding a migration, write the current schema's (npx tsx scripts/fixtures/make-schema-fixtures.ts writes those missing)",
  );
  assert.ok(
    versions.every((v) => v <= LATEST_SCHEMA_VERSION),
    'no fixture of a schema this build does not know',
  );
  const tmp = tempDir();
  try {
    for (const fixture of schemaFixtures()) {
      const db = loadSchemaFixture(fixture, tmp.file(`v${fixture.version}.db`));
      assert.is(schemaVersion(db), fixture.version);
      for (const table of db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").pluck().all() as string[]) {
        assert.ok((db.prepare(`SELECT COUNT(*) FROM ${table}`).pluck().get() as number) > 0, `schema ${fixture.version}: table ${table} holds rows`);
      }
      db.close();
    }
  } finally {
    tmp.remove();
  }
});

for (const fixture of schemaFixtures()) {
  test(`migrate-upgrade - schema ${fixture.version} upgraded to ${LATEST_SCHEMA_VERSION}: every named index and column of a fresh database, the log byte for byte, the projection refolds as a rebuild`, async () => {
    const tmp = tempDir();
    const fresh = freshSchema(tmp);
    const db = loadSchemaFixture(fixture, tmp.file('upgraded.db'));
    const scratch = openDatabase(tmp.file('rebuilt.db'));
    const log = new SqliteEventLog(db);
    try {
      const before = eventRows(db);
      const result = migrate(db);
      assert.is(result.from, fixture.version);
      assert.is(result.to, LATEST_SCHEMA_VERSION);

      const want = named(fresh);
      const got = named(db);
      assert.ok(Object.keys(want).length >= 15, 'the fresh schema names its indexes');
      for (const [name, index] of Object.entries(want)) {
        assert.ok(got[name], `index ${name} exists on the upgraded database`);
        assert.equal(got[name], index, `index ${name} is defined as on a fresh database`);
      }
      assert.equal(Object.keys(got), Object.keys(want), 'no index the fresh schema lacks');
      assert.equal(shape(db), shape(fresh), 'the same tables and columns (types, defaults, nullability, keys)');

      assert.equal(eventRows(db), before, 'every event row survives byte for byte');
      assert.ok(before.length > 80);

      await catchUpProjection(db, log); // what the next worker does with the upgraded file
      migrate(scratch);
      await rebuildProjection(scratch, log);
      assert.ok((db.prepare('SELECT COUNT(*) FROM session_message').pluck().get() as number) > 0, 'the projection holds rows again');
      assert.is(projectionHash(db), projectionHash(scratch), 'the refolded projection equals a rebuild from the log');
    } finally {
      await log.close();
      db.close();
      scratch.close();
      fresh.close();
      tmp.remove();
    }
  });
}

/** A v16 database whose log holds `ses_child` admitted by `ses_tools`'s session call (as a v16 build with ctx.callSession wrote it). */
function v16WithCall(file: string): Db {
  const db = loadSchemaFixture(schemaFixtures().find((f) => f.version === 16)!, file);
  const first = db.prepare("SELECT version, time, data FROM event WHERE aggregate_id = 'ses_tools' AND seq = 1").get() as {
    version: number;
    time: number;
    data: Buffer;
  };
  const { tags: _tags, ...admitted } = unpack(first.data) as Record<string, unknown>;
  const payload = { ...admitted, inputId: 'inp_child', prompt: 'count the apples', caller: 'ses_tools' };
  const head = db.prepare('SELECT MAX(position) FROM event').pluck().get() as number;
  db.prepare(
    "INSERT INTO event (position, id, aggregate_id, seq, type, version, time, data, committed_at) VALUES (?, 'evt_child', 'ses_child', 1, 'input.admitted', ?, ?, ?, ?)",
  ).run(head + 1, first.version, first.time, pack(payload), first.time);
  // folded by that build's projector, which had no column for the caller
  db.prepare(
    "INSERT INTO session (session_id, state, waiting, pending_inputs, last_seq, time_created, time_updated) VALUES ('ses_child', 'idle', 0, 1, 1, ?, ?)",
  ).run(first.time, first.time);
  db.prepare("UPDATE projector_checkpoint SET position = ? WHERE name = 'main'").run(head + 1);
  return db;
}

test('migrate-upgrade - schema 17 (called_by): a log holding a session call refolds its projection, so the child names its parent; one without keeps its projection', async () => {
  const tmp = tempDir();
  const called = v16WithCall(tmp.file('called.db'));
  const plain = loadSchemaFixture(schemaFixtures().find((f) => f.version === 16)!, tmp.file('plain.db'));
  const log = new SqliteEventLog(called);
  try {
    const messages = (db: Db) => db.prepare('SELECT COUNT(*) FROM session_message').pluck().get() as number;
    const before = messages(plain);
    migrate(plain);
    assert.is(messages(plain), before, 'no session call in the log: the projection stays');
    assert.is(plain.prepare("SELECT position FROM projector_checkpoint WHERE name = 'main'").pluck().get(), 126);

    migrate(called);
    assert.is(messages(called), 0, 'a session call in the log: the projection is emptied');
    assert.equal(called.prepare('SELECT * FROM projector_checkpoint').all(), []);
    const page = await listFromProjection(called, log, { limit: 100 });
    const row = (id: string) => page.sessions.find((s) => s.sessionId === id)!;
    assert.equal([row('ses_child').calledBy, row('ses_child').childCount], ['ses_tools', 0]);
    assert.equal([row('ses_tools').calledBy, row('ses_tools').childCount], [null, 1]);
    assert.equal(
      (await listFromProjection(called, log, { calledBy: 'ses_tools' })).sessions.map((s) => s.sessionId),
      ['ses_child'],
    );
  } finally {
    await log.close();
    called.close();
    plain.close();
    tmp.remove();
  }
});

test.run();
