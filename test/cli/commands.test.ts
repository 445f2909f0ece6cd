/** The log commands through real subprocesses: status, cancel, check, export, replay, tail. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { openEngine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { eventImporter } from '../../src/storage/sqlite/import-events.ts';
import { committed, ev, session } from '../../src/testing/fixtures.ts';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { deleteEvents } from '../support/stored-events.ts';

async function seeded() {
  const tmp = tempDir();
  const db = tmp.file('src.db');
  const engine = await openEngine({ file: db, runner: echoRunner({ steps: 2 }) });
  for (const s of ['ses_a', 'ses_b']) {
    await engine.admit(s, { prompt: `hello from ${s}` });
    await engine.awaitIdle(s);
  }
  await engine.admit('ses_b', { prompt: 'waiting', wake: false });
  await engine.close();
  return { tmp, db };
}

test('cli status - plain words and --json; unknown sessions exit 1', async () => {
  const { tmp, db } = await seeded();
  const all = await runCli(['status', '--db', db]);
  assert.is(all.code, 0, all.stderr);
  assert.match(all.stdout, /ses_a: settled at seq \d+; no owner; last turn succeeded/);
  assert.not.match(all.stdout, /ses_a: settled[^\n]*phase/, 'a settled turn shows no phase');
  assert.match(all.stdout, /ses_b: settled .*\n {2}pending inputs: 1 \(\d+ bytes\): inp_\w+ \(queue\)/);
  const one = await runCli(['status', 'ses_a', '--db', db, '--json']);
  const row = JSON.parse(one.stdout);
  assert.equal([row.sessionId, row.state, row.owner, row.outcome], ['ses_a', 'settled', null, 'succeeded']);
  const missing = await runCli(['status', 'ses_nope', '--db', db]);
  assert.is(missing.code, 66, 'not found');
  assert.match(missing.stdout, 'no such session');
  tmp.remove();
});

test('cli cancel - nothing to cancel exits 1 with a plain message', async () => {
  const { tmp, db } = await seeded();
  const r = await runCli(['cancel', 'ses_a', '--db', db]);
  assert.is(r.code, 1);
  assert.match(r.stdout, 'ses_a: nothing to cancel');
  tmp.remove();
});

test('cli check - a clean log passes; a log with two live owners fails with the sequences involved', async () => {
  const { tmp, db } = await seeded();
  const clean = await runCli(['check', '--db', db]);
  assert.is(clean.code, 0, clean.stdout + clean.stderr);
  assert.match(clean.stdout, /events in 2 sessions, no violations/);
  const bad = tmp.file('bad.db');
  const d = openDatabase(bad);
  migrate(d);
  const x = session('ses_x');
  const claim = (exe: string, owner: string, time: number) =>
    x.ev('execution.claimed', { executionId: exe, ownerId: owner, expiresAt: time + 30_000, leaseMs: 30_000, assistantSeq: -1 }, { time });
  eventImporter(d)([claim('exe_1', 'own_a', 1_000), claim('exe_2', 'own_b', 2_000)]);
  d.close();
  const r = await runCli(['check', '--db', bad]);
  assert.is(r.code, 1);
  assert.match(r.stdout, 'VIOLATION two_live_owners at seq 1, 2');
  tmp.remove();
});

test('cli check - a prompt nobody ran is reported as stranded (liveness), with readable times; --safety-only skips it', async () => {
  const tmp = tempDir();
  const db = tmp.file('stranded.db');
  const d = openDatabase(db);
  migrate(d);
  const at = Date.UTC(2026, 0, 2, 3, 4, 5);
  eventImporter(d)([
    session('ses_s').ev('input.admitted', { inputId: 'inp_lost', prompt: 'anyone?', delivery: 'queue', wake: true, source: 'user' }, { time: at }),
  ]);
  d.close();
  const r = await runCli(['check', '--db', db]);
  assert.is(r.code, 1, r.stdout + r.stderr);
  assert.match(
    r.stdout,
    'VIOLATION stranded_input at seq 1: session ses_s: input inp_lost (admitted at seq 1, 2026-01-02T03:04:05.000Z) asked for a wake and was never run',
  );
  const safety = await runCli(['check', '--db', db, '--safety-only']);
  assert.is(safety.code, 0, safety.stdout);
  assert.match(safety.stdout, 'liveness not checked');
  const graced = await runCli(['check', '--db', db, '--grace-ms', String(10 * 365 * 86_400_000)]);
  assert.is(graced.code, 0, 'within a (very long) grace it is not yet late');
  tmp.remove();
});

test('cli export + replay - a database rebuilt from an export matches; a damaged file keeps what came before', async () => {
  const { tmp, db } = await seeded();
  const file = tmp.file('log.sdx');
  const ex = await runCli(['export', '--db', db, '--out', file]);
  assert.is(ex.code, 0, ex.stderr);
  assert.match(ex.stdout, /exported \d+ events from .* to .*log\.sdx/);
  const out = tmp.file('replayed.db');
  const rp = await runCli(['replay', file, '--db', out]);
  assert.is(rp.code, 0, rp.stderr);
  assert.match(rp.stdout, /replayed \d+ events into .* and rebuilt its projection/);
  const [a, b] = await Promise.all([runCli(['status', '--db', db, '--json']), runCli(['status', '--db', out, '--json'])]);
  const strip = (s: string) =>
    (JSON.parse(s) as { sessions: Record<string, unknown>[] }).sessions.map((r) => {
      delete r.leaseLeftMs;
      return r;
    });
  assert.equal(strip(b.stdout), strip(a.stdout), 'same sessions, same states');
  const again = await runCli(['replay', file, '--db', out]);
  assert.is(again.code, 2);
  assert.match(again.stderr, 'already holds an event log');
  const one = tmp.file('one.db');
  const partial = await runCli(['replay', file, '--db', one, '--session', 'ses_a', '--until-seq', '3']);
  assert.is(partial.code, 0);
  assert.match(partial.stdout, 'replayed 3 events');
  const bytes = readFileSync(file);
  writeFileSync(file, bytes.subarray(0, bytes.length - 5));
  const damaged = await runCli(['replay', file, '--db', tmp.file('damaged.db')]);
  assert.is(damaged.code, 1);
  assert.match(damaged.stderr, /is damaged at byte \d+ \(frame \d+\).*Everything before it was replayed/);
  tmp.remove();
});

test('cli export - warns when a session starts past seq 1 or jumps, and when the file holds fewer events than its header says', async () => {
  const tmp = tempDir();
  const db = tmp.file('holes.db');
  const d = openDatabase(db);
  migrate(d);
  const admitted = (sessionId: string, seq: number) =>
    committed(ev('input.admitted', { inputId: `inp_${seq}`, prompt: `p${seq}`, delivery: 'queue', wake: false }), { sessionId, seq, time: 1_000 + seq });
  const seqs = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
  eventImporter(d)(seqs(17).map((n) => admitted('ses_late', n)));
  eventImporter(d)(seqs(5).map((n) => admitted('ses_gap', n)));
  eventImporter(d)(seqs(2).map((n) => admitted('ses_whole', n)));
  // a log that lost the start of one session and the middle of another (as after a purge below a seq)
  deleteEvents(d, (r) => (r.aggregate_id === 'ses_late' && r.seq < 15) || (r.aggregate_id === 'ses_gap' && (r.seq === 3 || r.seq === 4)));
  d.close();
  const one = await runCli(['export', '--db', db, '--session', 'ses_late', '--out', tmp.file('late.sdx')]);
  assert.is(one.code, 0, one.stderr);
  assert.match(one.stdout, 'exported 3 events of ses_late');
  assert.match(one.stderr, 'warning: session ses_late starts at seq 15, not 1: events 1-14 are not in the log');
  assert.match(one.stderr, 'warning: the header says 17 events');
  assert.match(one.stderr, 'but the file holds 3');
  const all = await runCli(['export', '--db', db, '--out', tmp.file('all.sdx')]);
  assert.is(all.code, 0, all.stderr);
  assert.match(all.stderr, 'warning: session ses_late starts at seq 15');
  assert.match(all.stderr, 'warning: session ses_gap jumps from seq 2 to 5: events 3-4 are not in the log');
  assert.not.match(all.stderr, 'ses_whole', 'a whole session gets no warning');
  const clean = await runCli(['export', '--db', db, '--session', 'ses_whole', '--out', tmp.file('whole.sdx')]);
  assert.is(clean.stderr, '', 'no warnings for a whole session');
  tmp.remove();
});

test('cli tail - follows committed events, one line each, filtered by type', async () => {
  const { tmp, db } = await seeded();
  const tail = startCli(['tail', '--db', db, '--from-start', '--type', 'input.*']);
  await tail.waitFor(/ses_b #\d+ input\.admitted .*waiting/);
  assert.not.match(tail.output(), 'step.started', 'filtered by type');
  tail.child.kill('SIGINT');
  assert.is(await tail.exited, 0);
  assert.match(tail.output(), /stopped after \d+ events/);
  tmp.remove();
});

test('cli read-only commands - a missing, foreign or newer database is refused with what is wrong, and left exactly as it was', async () => {
  const tmp = tempDir();
  const missing = tmp.file('nothere.db');
  const none = await runCli(['status', '--db', missing]);
  assert.is(none.code, 2, none.stderr);
  assert.match(none.stderr, `No database at ${missing}`);
  assert.not.ok(existsSync(missing), 'no file created');

  const foreign = tmp.file('foreign.db');
  const f = openDatabase(foreign);
  f.exec('CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)');
  f.close();
  const tables = () => {
    const d = openDatabase(foreign, { readonly: true });
    const t = d.prepare('SELECT name FROM sqlite_master ORDER BY name').pluck().all();
    d.close();
    return t;
  };
  const before = tables();
  for (const args of [['status'], ['tail'], ['export', '--out', tmp.file('x.sdx')], ['check']]) {
    const r = await runCli([...args, '--db', foreign]);
    assert.is(r.code, 2, `${args[0]}: ${r.stderr}`);
    assert.match(r.stderr, 'is not a sessiond database', args[0]);
  }
  assert.equal(tables(), before, 'the foreign file was not migrated or changed');

  const newer = tmp.file('newer.db');
  const n = openDatabase(newer);
  migrate(n);
  n.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, ?, 0)').run('from the future');
  n.close();
  const r = await runCli(['status', '--db', newer]);
  assert.is(r.code, 65, `a database this sessiond cannot read is a data error (65): ${r.stderr}`);
  assert.match(r.stderr, 'written by a newer sessiond (schema version 999');
  tmp.remove();
});

test.run();
