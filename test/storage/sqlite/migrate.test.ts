import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase } from '../../../src/storage/sqlite/database.ts';
import { migrate, schemaVersion, type Migration } from '../../../src/storage/sqlite/migrate.ts';
import { migrations, LATEST_SCHEMA_VERSION } from '../../../src/storage/sqlite/migrations/index.ts';
import { ErrorCode } from '../../../src/errors.ts';
import { expectCode } from '../../../src/testing/fixtures.ts';
import { tempDir } from '../../support/tmp.ts';
import { storedEvents } from '../../../src/storage/sqlite/event-rows.ts';

type Column = { name: string; type: string; notnull: number; dflt_value: string | null; pk: number };
const columns = (db: ReturnType<typeof openDatabase>, table: string) =>
  Object.fromEntries((db.prepare(`PRAGMA table_info(${table})`).all() as Column[]).map((c) => [c.name, c]));
const indexes = (db: ReturnType<typeof openDatabase>) =>
  db.prepare(`SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL`).all() as {
    name: string;
    tbl_name: string;
    sql: string;
  }[];

function fresh() {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('s.db'));
  return {
    tmp,
    db,
    close: () => {
      db.close();
      tmp.remove();
    },
  };
}

test('migrate - creates the schema from empty and reports the version reached', () => {
  const { db, close } = fresh();
  const result = migrate(db);
  assert.is(result.from, 0);
  assert.is(result.to, LATEST_SCHEMA_VERSION);
  assert.ok(LATEST_SCHEMA_VERSION >= 2, 'at least two migrations ship');
  assert.equal(
    result.applied.map((m) => m.version),
    migrations.map((m) => m.version),
  );
  close();
});

test('migrate - re-running is a no-op', () => {
  const { db, close } = fresh();
  migrate(db);
  const again = migrate(db);
  assert.equal(again.applied, []);
  assert.is(again.to, LATEST_SCHEMA_VERSION);
  close();
});

test('migrate - upgrading preserves existing rows (msg_existing) and creates session_input; version 11 empties the projection for a refold, never the log', () => {
  const { db, close } = fresh();
  migrate(db, { target: 1 });
  assert.is(schemaVersion(db), 1);
  const hasInput = () => db.prepare(`SELECT 1 FROM sqlite_master WHERE type='table' AND name='session_input'`).get() !== undefined;
  assert.not.ok(hasInput(), 'session_input does not exist at version 1');
  db.prepare(`INSERT INTO session_message (id, session_id, type, seq, time_created, time_updated, data)
              VALUES ('msg_existing', 'ses_a', 'user', 1, 10, 11, '{"text":"hi"}')`).run();
  db.prepare(
    `INSERT INTO event (position, id, aggregate_id, seq, type, version, time, data) VALUES (1, 'evt_1', 'ses_a', 1, 'input.admitted', 1, 10, x'80')`,
  ).run();
  const result = migrate(db, { target: 10 });
  assert.is(result.from, 1);
  assert.ok(hasInput(), 'session_input created by the upgrade');
  const row = db.prepare(`SELECT * FROM session_message WHERE id = 'msg_existing'`).get();
  assert.equal(row, { id: 'msg_existing', session_id: 'ses_a', type: 'user', seq: 1, time_created: 10, time_updated: 11, data: '{"text":"hi"}' });
  db.prepare(`INSERT INTO projector_checkpoint (name, position) VALUES ('main', 1)`).run();
  assert.is(migrate(db).to, LATEST_SCHEMA_VERSION);
  // the session list is folded from the log's events: the projection starts again from position 0
  assert.equal(db.prepare('SELECT COUNT(*) AS n FROM session_message').get(), { n: 0 });
  assert.equal(db.prepare('SELECT * FROM projector_checkpoint').all(), []);
  assert.equal(
    storedEvents(db)
      .after(0, -1)
      .map((r) => [r.position, r.id, r.aggregate_id, r.seq, r.type, r.version, r.time, Buffer.from(r.data).toString('hex')]),
    [[1, 'evt_1', 'ses_a', 1, 'input.admitted', 1, 10, '80']],
    'the log is untouched (a batch of one since schema 22)',
  );
  close();
});

test('migrate - tables have the seed columns, defaults and nullability', () => {
  const { db, close } = fresh();
  migrate(db);
  const shape = (table: string) =>
    Object.fromEntries(
      Object.values(columns(db, table)).map((c) => [
        c.name,
        `${c.type}${c.notnull ? ' NOT NULL' : ''}${c.dflt_value !== null ? ` DEFAULT ${c.dflt_value}` : ''}`,
      ]),
    );
  assert.equal(shape('session_execution'), {
    id: 'TEXT',
    session_id: 'TEXT NOT NULL',
    owner_id: 'TEXT NOT NULL',
    assistant_message_id: 'TEXT',
    phase: 'TEXT NOT NULL',
    assistant_seq: 'INTEGER NOT NULL DEFAULT -1',
    time_created: 'INTEGER NOT NULL',
    expires_at: 'INTEGER NOT NULL',
    recovery_error: 'TEXT',
  });
  assert.equal(shape('session_input'), {
    id: 'TEXT',
    session_id: 'TEXT NOT NULL',
    prompt: 'TEXT NOT NULL',
    delivery: 'TEXT NOT NULL',
    admitted_seq: 'INTEGER NOT NULL',
    promoted_seq: 'INTEGER',
    wake_pending: 'INTEGER NOT NULL DEFAULT 0',
    time_created: 'INTEGER NOT NULL',
    dropped_seq: 'INTEGER',
    not_before: 'INTEGER',
    parts: 'TEXT',
  });
  assert.equal(shape('session_message'), {
    id: 'TEXT',
    session_id: 'TEXT NOT NULL',
    type: 'TEXT NOT NULL',
    seq: 'INTEGER NOT NULL',
    time_created: 'INTEGER NOT NULL',
    time_updated: 'INTEGER NOT NULL',
    data: 'TEXT NOT NULL',
  });
  assert.equal(shape('session_recovery'), {
    session_id: 'TEXT NOT NULL',
    execution_id: 'TEXT NOT NULL',
    assistant_message_id: 'TEXT',
    continuation_message_id: 'TEXT NOT NULL',
    phase: 'TEXT NOT NULL',
    wake_pending: 'INTEGER NOT NULL DEFAULT 1',
    wake_attempts: 'INTEGER NOT NULL DEFAULT 0',
    recovery_error: 'TEXT',
    time_created: 'INTEGER NOT NULL',
  });
  assert.is(columns(db, 'session_recovery').assistant_message_id!.notnull, 0, 'session_recovery.assistant_message_id is nullable');
  assert.equal(shape('session_wait'), {
    session_id: 'TEXT NOT NULL',
    execution_id: 'TEXT NOT NULL',
    kind: 'TEXT NOT NULL',
    name: 'TEXT NOT NULL',
    message_id: 'TEXT',
    call_id: 'TEXT',
    tool: 'TEXT',
    until: 'INTEGER',
    outcome: 'TEXT',
    time_created: 'INTEGER NOT NULL',
    time_resolved: 'INTEGER',
  });
  close();
});

test('migrate - the named indexes exist, unique where the design says', () => {
  const { db, close } = fresh();
  migrate(db);
  const byName = Object.fromEntries(indexes(db).map((i) => [i.name, i]));
  const expect = (name: string, table: string, cols: string, unique: boolean) => {
    const idx = byName[name];
    assert.ok(idx, `index ${name} exists`);
    assert.is(idx!.tbl_name, table);
    assert.match(idx!.sql.replace(/\s+/g, ' '), `(${cols})`);
    assert.is(idx!.sql.startsWith('CREATE UNIQUE'), unique, `${name} unique=${unique}`);
  };
  expect('event_batch_session_idx', 'event_batch', 'aggregate_id, last_seq', true);
  expect('event_batch_first_id_idx', 'event_batch', 'first_id', true);
  expect('session_execution_owner_idx', 'session_execution', 'owner_id', false);
  expect('session_message_session_type_seq_idx', 'session_message', 'session_id, type, seq', false);
  expect('session_recovery_execution_idx', 'session_recovery', 'execution_id', true);
  expect('session_wait_due_idx', 'session_wait', 'until', false);
  // the unique indexes really refuse a second batch ending at the same sequence, and a first id twice
  const ins = db.prepare(`INSERT INTO event_batch (aggregate_id, last_seq, count, first_id, frames) VALUES ('ses_a', ?, 1, ?, x'90')`);
  ins.run(1, 'evt_1');
  assert.throws(() => ins.run(1, 'evt_2'), /UNIQUE constraint failed/);
  assert.throws(() => ins.run(2, 'evt_1'), /UNIQUE constraint failed/);
  close();
});

test('migrate - a database written by a newer version is refused, naming both versions', () => {
  const { db, close } = fresh();
  migrate(db);
  db.prepare(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from_the_future', 0)`).run(LATEST_SCHEMA_VERSION + 5);
  const err = expectCode(() => migrate(db), ErrorCode.SchemaTooNew, `version ${LATEST_SCHEMA_VERSION + 5}`);
  assert.match(err.message, `up to ${LATEST_SCHEMA_VERSION}`);
  close();
});

test('migrate - a failed migration rolls back and leaves the last good version', () => {
  const { db, close } = fresh();
  const broken: Migration[] = [
    ...migrations,
    { version: migrations.length + 1, name: 'half_done', up: `CREATE TABLE half (x INTEGER); INSERT INTO nowhere VALUES (1);` },
  ];
  const err = expectCode(() => migrate(db, { migrations: broken }), ErrorCode.MigrationFailed, 'half_done');
  assert.match(err.message, `stays at version ${LATEST_SCHEMA_VERSION}`);
  assert.is(schemaVersion(db), LATEST_SCHEMA_VERSION);
  assert.is(db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'half'`).get(), undefined, 'partial DDL rolled back');
  close();
});

test('sqlite - WAL, foreign keys, busy timeout; FULL selectable; two connections share a file', () => {
  const tmp = tempDir();
  const a = openDatabase(tmp.file('s.db'));
  const b = openDatabase(tmp.file('s.db'), { synchronous: 'FULL' });
  assert.is(a.pragma('journal_mode', { simple: true }), 'wal');
  assert.is(a.pragma('foreign_keys', { simple: true }), 1);
  assert.is(a.pragma('synchronous', { simple: true }), 1, 'NORMAL');
  assert.is(b.pragma('synchronous', { simple: true }), 2, 'FULL');
  assert.ok((a.pragma('busy_timeout', { simple: true }) as number) > 0);
  migrate(a);
  assert.is(schemaVersion(b), LATEST_SCHEMA_VERSION, 'the second connection sees the migrated schema');
  assert.throws(() => openDatabase(tmp.file('x.db'), { synchronous: 'OFF' as never }), /synchronous/);
  a.close();
  b.close();
  tmp.remove();
});

test("migrate - the projector's per-claim statements search indexes: none scans a table that grows with history", () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('plans.db'));
  migrate(db);
  const plan = (sql: string) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all('x') as { detail: string }[]).map((r) => r.detail).join('; ');
  const clearWakes = plan('UPDATE session_recovery SET wake_pending = 0 WHERE session_id = ? AND wake_pending <> 0');
  assert.match(clearWakes, /SEARCH session_recovery USING INDEX/, clearWakes);
  db.close();
  tmp.remove();
});

test.run();
