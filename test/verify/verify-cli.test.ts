/**
 * `sessiond verify` as a real process: a line per session that reads differently and a summary,
 * exit 1 when any and 0 when none, `--json`, a database of an older schema left untouched, an
 * export file, and clear errors for what is not a log.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ExportWriter } from '../../src/export/export-file.ts';
import { LATEST_SCHEMA_VERSION } from '../../src/storage/sqlite/migrations/index.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { committed, ev } from '../../src/testing/fixtures.ts';
import { runCli } from '../support/cli.ts';
import { loadSchemaFixture, schemaFixtures } from '../support/schema-fixtures.ts';
import { tempDir } from '../support/tmp.ts';
import { currentDb } from './helpers.ts';
import { changeEvents } from '../support/stored-events.ts';

const tmp = tempDir();
const good = tmp.file('good.db');
const bad = tmp.file('bad.db');

test.before(async () => {
  await currentDb(good);
  await currentDb(bad, (db) => changeEvents(db, (r) => r.aggregate_id === 'ses_tools' && r.seq === 4, { version: 9 }));
});
test.after(() => tmp.remove());

test('verify cli - a database that reads the same: says how it was read and what was compared, exit 0', async () => {
  const r = await runCli(['verify', '--db', good]);
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, `read ${good} read-only, in place (schema ${LATEST_SCHEMA_VERSION}, this version's)`);
  assert.match(r.stdout, "compared the stored projection at position 125 with what this version's projector folds from the log");
  assert.match(r.stdout, 'compared 7 stored snapshots with the current fold at their sequence');
  assert.ok(r.stdout.trimEnd().endsWith('verified 7 sessions (125 events): all read the same with this version'), r.stdout);
});

test('verify cli - a session that would read differently: its line with the first sequence, the summary, exit 1; --json the same as data', async () => {
  const r = await runCli(['verify', '--db', bad]);
  assert.is(r.code, 1, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  assert.ok(
    lines.some((l) => l.startsWith('ses_tools  undecodable at seq 4: Event row ') && l.includes('has version 9, but this build reads version 1')),
    r.stdout,
  );
  assert.is(lines.at(-1), '1 of 7 sessions would read differently with this version: 1 undecodable');

  const j = await runCli(['verify', '--db', bad, '--json']);
  assert.is(j.code, 1, j.stderr);
  const report = JSON.parse(j.stdout);
  assert.is(report.ok, false);
  assert.is(report.sessions, 7);
  assert.is(report.events, 125);
  assert.equal(
    report.differing.map((s: { sessionId: string; problems: { kind: string; seq: number }[] }) => [s.sessionId, s.problems[0]!.kind, s.problems[0]!.seq]),
    [['ses_tools', 'undecodable', 4]],
  );
  const ok = JSON.parse((await runCli(['verify', '--db', good, '--json'])).stdout);
  assert.equal([ok.ok, ok.differing, ok.log], [true, [], []]);
});

test('verify cli - a database of an older schema, given as FILE: read in place, its upgrade tried on a temporary copy, the file untouched', async () => {
  const fixture = schemaFixtures().find((f) => f.version === 5)!;
  const file = tmp.file('v5.db');
  const db = loadSchemaFixture(fixture, file);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  const before = createHash('sha256').update(readFileSync(file)).digest('hex');
  const r = await runCli(['verify', file]);
  assert.is(r.code, 0, r.stdout + r.stderr);
  assert.match(
    r.stdout,
    `${file} is at schema 5, older than this version's ${LATEST_SCHEMA_VERSION}: read it read-only in place, and migrated a temporary copy to schema ${LATEST_SCHEMA_VERSION}`,
  );
  assert.match(r.stdout, 'verified 5 sessions (85 events): all read the same with this version');
  assert.is(createHash('sha256').update(readFileSync(file)).digest('hex'), before, 'not a byte of the file changed');
  const still = openDatabase(file, { readonly: true });
  assert.is(still.prepare('SELECT MAX(version) FROM schema_migrations').pluck().get(), 5);
  still.close();
});

test("verify cli - an export file: every frame decoded on its own; one that does not decode is its session's problem", async () => {
  const file = tmp.file('log.sdx');
  assert.is((await runCli(['export', '--db', good, '--out', file])).code, 0);
  const r = await runCli(['verify', file]);
  assert.is(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, 'verified 7 sessions (125 events): all read the same with this version');

  const damaged = tmp.file('damaged.sdx');
  const w = await ExportWriter.create(damaged, { created: 0, source: 'test', events: 3 });
  const a = { sessionId: 'ses_a' };
  await w.write([
    committed(ev('input.admitted', { inputId: 'inp_1' }), { ...a, seq: 1 }),
    { ...committed(ev('input.admitted', { inputId: 'inp_2' }), { ...a, seq: 2 }), version: 7 },
    committed(ev('session.tagged'), { ...a, seq: 3 }),
  ]);
  await w.close();
  const d = await runCli(['verify', damaged]);
  assert.is(d.code, 1, d.stderr);
  assert.match(d.stdout, /ses_a {2}undecodable at seq 2: .*damaged\.sdx is damaged at byte \d+ \(frame 2\): .*has version 7, but this build reads version \d+/);
  assert.match(d.stdout, '1 of 1 session would read differently with this version: 1 undecodable');
});

test("verify cli - what is not a log: a missing file (exit 66), a SQLite file that is not sessiond's (exit 2), each saying what to do", async () => {
  const missing = await runCli(['verify', tmp.file('nowhere.db')]);
  assert.is(missing.code, 66);
  assert.match(
    missing.stderr,
    `No such file: ${tmp.file('nowhere.db')}. Give verify an export file (sessiond export --out FILE) or a database file, or use --db FILE or --nats URL.`,
  );
  const other = openDatabase(tmp.file('other.db'));
  other.exec('CREATE TABLE t (x)');
  other.close();
  const foreign = await runCli(['verify', tmp.file('other.db')]);
  assert.is(foreign.code, 2);
  assert.match(foreign.stderr, 'is not a sessiond database (it has no sessiond schema): point --db at a file sessiond created');
  const none = await runCli(['verify', '--db', tmp.file('nowhere.db')]);
  assert.is(none.code, 2);
  assert.match(none.stderr, 'No database at');
});

test.run();
