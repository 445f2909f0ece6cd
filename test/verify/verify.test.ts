/**
 * `verifyLog` over real databases: every committed fixture of an earlier schema reads the same
 * with this version (as it is, through a migrated copy, and upgraded), and each way a stored log
 * can read differently is reported for its session, with the first sequence where it goes wrong.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { assign } from 'xstate';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { evolve } from '../../src/machines/decider.ts';
import { foldContext } from '../../src/machines/session-context.ts';
import { sessionMachine } from '../../src/machines/session-machine.ts';
import { Projector } from '../../src/projector/projector.ts';
import { migrate, schemaVersion } from '../../src/storage/sqlite/migrate.ts';
import { LATEST_SCHEMA_VERSION } from '../../src/storage/sqlite/migrations/index.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { catchUpProjection } from '../../src/projector/catch-up.ts';
import { ev, draft } from '../../src/testing/fixtures.ts';
import { loadSchemaFixture, schemaFixtures } from '../support/schema-fixtures.ts';
import { tempDir } from '../support/tmp.ts';
import { currentDb, tamperedFixture, problemsOf, verifyFile } from './helpers.ts';
import { changeEvents, deleteEvents, rewriteEvents, storedEventRows } from '../support/stored-events.ts';

const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

test('verify - every committed schema fixture reads the same: as it is (an older one upgraded on a copy, the file untouched) and upgraded', async () => {
  const tmp = tempDir();
  try {
    for (const fixture of schemaFixtures()) {
      const file = tmp.file(`v${fixture.version}.db`);
      const db = loadSchemaFixture(fixture, file);
      const rows = storedEventRows(db);
      const events = rows.length;
      const sessions = new Set(rows.map((r) => r.aggregate_id)).size;
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.close();
      const before = sha(file);
      const asIs = await verifyFile(file);
      assert.ok(asIs.ok, `schema ${fixture.version} as it is: ${JSON.stringify(asIs.differing)}`);
      assert.is(asIs.events, events);
      assert.is(asIs.sessions, sessions);
      if (fixture.version < LATEST_SCHEMA_VERSION) {
        assert.match(
          asIs.notes.join('\n'),
          `migrated a temporary copy to schema ${LATEST_SCHEMA_VERSION}: the upgrade succeeds and keeps all ${events} events byte for byte`,
        );
      } else assert.match(asIs.notes.join('\n'), `read ${file} read-only, in place (schema ${fixture.version}, this version's)`);
      assert.is(sha(file), before, 'verify never writes the file it reads');

      const upgraded = openDatabase(file);
      assert.is(schemaVersion(upgraded), fixture.version);
      migrate(upgraded);
      const log = new SqliteEventLog(upgraded);
      const head = await catchUpProjection(upgraded, log);
      await log.close();
      upgraded.close();
      const after = await verifyFile(file);
      assert.ok(after.ok, `schema ${fixture.version} upgraded: ${JSON.stringify(after.differing)}`);
      assert.match(after.notes.join('\n'), `compared the stored projection at position ${head}`);
      if (fixture.version >= 6) assert.match(after.notes.join('\n'), `compared ${sessions} stored snapshots with the current fold`);
    }
  } finally {
    tmp.remove();
  }
});

test('verify - the version-1 tool calls of the schema 1 to 9 fixtures read through the catalog upcaster', async () => {
  const tmp = tempDir();
  const db = loadSchemaFixture(schemaFixtures()[0]!, tmp.file('v1.db'));
  assert.ok((db.prepare("SELECT COUNT(*) FROM event WHERE type = 'tool.called' AND version = 1").pluck().get() as number) >= 5);
  db.prepare("UPDATE event SET version = 0 WHERE type = 'tool.called' AND aggregate_id = 'ses_tools'").run(); // a version no upcaster starts from
  db.close();
  const report = await verifyFile(tmp.file('v1.db'));
  assert.equal(problemsOf(report, 'ses_tools'), ['undecodable@7']);
  assert.equal(report.differing.length, 1);
  tmp.remove();
});

test('verify - undecodable: an unknown payload version, bytes that are not msgpack, an unknown type, each at its seq; the other sessions read the same', async () => {
  const tmp = tempDir();
  await currentDb(tmp.file('s.db'), (db) => {
    changeEvents(db, (r) => r.aggregate_id === 'ses_tools' && r.seq === 4, { version: 9 });
    changeEvents(db, (r) => r.aggregate_id === 'ses_queue' && r.seq === 8, { data: Buffer.from([0x92]) });
    changeEvents(db, (r) => r.aggregate_id === 'ses_dropped' && r.seq === 3, { type: 'session.teleported' });
  });
  const report = await verifyFile(tmp.file('s.db'));
  assert.not.ok(report.ok);
  assert.equal(
    report.differing.map((s) => s.sessionId),
    ['ses_dropped', 'ses_queue', 'ses_tools'],
  );
  const first = (id: string) => report.differing.find((s) => s.sessionId === id)!.problems[0]!;
  assert.equal([first('ses_tools').kind, first('ses_tools').seq], ['undecodable', 4]);
  assert.match(first('ses_tools').reason, 'has version 9, but this build reads version 1');
  assert.equal([first('ses_queue').kind, first('ses_queue').seq], ['undecodable', 8]);
  assert.match(first('ses_queue').reason, 'not valid msgpack');
  assert.equal([first('ses_dropped').kind, first('ses_dropped').seq], ['undecodable', 3]);
  assert.match(first('ses_dropped').reason, 'unknown event type "session.teleported"');
  tmp.remove();
});

test('verify - refused: a gap, an event stored out of commit order, two live owners (the safety audit)', async () => {
  const tmp = tempDir();
  await currentDb(tmp.file('s.db'), (db) => {
    deleteEvents(db, (r) => r.aggregate_id === 'ses_tools' && r.seq === 5);
    const head = Math.max(...storedEventRows(db).map((r) => r.position));
    rewriteEvents(db, (rows) => {
      const moved = rows.find((r) => r.aggregate_id === 'ses_queue' && r.seq === 3)!;
      return [...rows.filter((r) => r !== moved), { ...moved, position: head + 1 }];
    });
  });
  const db = openDatabase(tmp.file('s.db'));
  const log = new SqliteEventLog(db);
  await log.append('ses_twice', 0, [
    draft(ev('input.admitted', { inputId: 'inp_1' }), { time: 1_000 }),
    draft(ev('execution.claimed', { executionId: 'exe_a', ownerId: 'own_a', expiresAt: 90_000 }), { time: 1_000 }),
    draft(ev('execution.started', { executionId: 'exe_a' }), { time: 1_001 }),
    draft(ev('execution.claimed', { executionId: 'exe_b', ownerId: 'own_b', expiresAt: 90_000 }), { time: 2_000 }),
  ]);
  await log.close();
  db.close();
  const report = await verifyFile(tmp.file('s.db'));
  const problem = (id: string) => report.differing.find((s) => s.sessionId === id)!.problems[0]!;
  assert.equal(problemsOf(report, 'ses_tools').slice(0, 1), ['refused@6']);
  assert.match(problem('ses_tools').reason, 'a gap: seq 5 missing, the next stored event');
  assert.equal(problemsOf(report, 'ses_queue').slice(0, 1), ['refused@4']);
  assert.match(problem('ses_queue').reason, 'out of commit order: seq 4 is at position');
  assert.equal(problemsOf(report, 'ses_twice'), ['refused@4']);
  assert.match(
    problem('ses_twice').reason,
    'two_live_owners: execution exe_b (own_b) claimed at seq 4 while execution exe_a (own_a, claimed at seq 2) was live',
  );
  assert.equal(report.differing.length, 3);
  tmp.remove();
});

test('verify - decides differently: a stored snapshot the fold contradicts (of this machine version, whole; of another, on what decides), a machine mutant, a fast fold that drifts from the machine', async () => {
  const tmp = tempDir();
  await currentDb(tmp.file('s.db'), (db) => {
    db.prepare("UPDATE session_snapshot SET data = json_set(data, '$.context.lastAssistantSeq', 99) WHERE session_id = 'ses_tools'").run();
    db.prepare("UPDATE session_snapshot SET machine = 'an_old_machine', data = json_set(data, '$.value', 'running') WHERE session_id = 'ses_queue'").run();
    // another version's context may be shaped differently: what does not decide is not compared
    db.prepare(
      "UPDATE session_snapshot SET machine = 'an_old_machine', data = json_set(data, '$.context.lastAssistantSeq', 99) WHERE session_id = 'ses_dropped'",
    ).run();
    // nor what an older context does not have at all
    db.prepare(
      "UPDATE session_snapshot SET machine = 'an_old_machine', data = json_remove(data, '$.context.pending', '$.context.recovery', '$.context.tags') WHERE session_id = 'ses_recovered'",
    ).run();
  });
  const report = await verifyFile(tmp.file('s.db'));
  assert.equal(problemsOf(report, 'ses_tools'), ['decides_differently@13']);
  const reason = (id: string) => report.differing.find((s) => s.sessionId === id)!.problems[0]!.reason;
  assert.match(reason('ses_tools'), 'the stored snapshot at seq 13 (this version) says context.lastAssistantSeq is 99, the current fold of the log says 10');
  assert.equal(problemsOf(report, 'ses_queue'), ['decides_differently@26']);
  assert.match(reason('ses_queue'), 'machine an_old_machine');
  assert.match(reason('ses_queue'), 'says value is "running", the current fold of the log says "settled"');
  assert.equal(problemsOf(report, 'ses_dropped'), []);
  assert.equal(problemsOf(report, 'ses_recovered'), []);
  assert.equal(report.differing.length, 2);

  // a machine whose fold forgets the tokens used: every snapshot of a session with usage contradicts it
  await currentDb(tmp.file('untouched.db'));
  const forgetful = sessionMachine.provide({
    actions: {
      fold: assign(({ context, event }) => ({ ...foldContext(context, event as unknown as SessionEvent), usage: { inputTokens: 0, outputTokens: 0 } })),
    },
  });
  const mutant = await verifyFile(tmp.file('untouched.db'), { machine: forgetful });
  assert.equal(problemsOf(mutant, 'ses_tools'), ['decides_differently@13']);
  assert.match(
    mutant.differing.find((s) => s.sessionId === 'ses_tools')!.problems[0]!.reason,
    'says context.usage.inputTokens is 100, the current fold of the log says 0',
  );
  assert.equal(problemsOf(mutant, 'ses_cancelled'), [], 'a session without usage folds the same');
  assert.ok((await verifyFile(tmp.file('untouched.db'))).ok, 'the session machine itself reads it the same');

  const drifting = await verifyFile(tmp.file('untouched.db'), {
    evolve: (s, e, m) => {
      const next = evolve(s, e, m);
      return e.type === 'step.ended' ? { ...next, value: 'idle' } : next;
    },
  });
  assert.equal(problemsOf(drifting, 'ses_cancelled'), [], 'no step ended there');
  const drift = drifting.differing.find((s) => s.sessionId === 'ses_recovered')!.problems[0]!;
  assert.equal([drift.kind, drift.seq], ['decides_differently', 22]);
  assert.match(drift.reason, 'folding step.ended (evt_');
  assert.match(drift.reason, 'the fast fold says value is "idle" and the machine says "running"');
  tmp.remove();
});

test('verify - projection differs: a tampered row, a missing one, rows of a session the log lacks; a projection behind the log is compared at its checkpoint', async () => {
  const tmp = tempDir();
  await currentDb(tmp.file('s.db'), (db) => {
    db.prepare("UPDATE session_input SET prompt = 'tampered' WHERE session_id = 'ses_tools'").run();
    db.prepare("DELETE FROM session_message WHERE session_id = 'ses_queue' AND seq = 23").run();
    db.prepare("INSERT INTO session_tag (session_id, key, value, time_created) VALUES ('ses_ghost', 'customer', 'acme', 0)").run();
  });
  const report = await verifyFile(tmp.file('s.db'));
  const only = (id: string) => report.differing.find((s) => s.sessionId === id)!.problems;
  assert.equal(problemsOf(report, 'ses_tools'), ['projection_differs@1']);
  assert.match(
    only('ses_tools')[0]!.reason,
    `session_input: row id="inp_ses_tools_weather": stored prompt "tampered", the current projector folds "weather in Oslo"`,
  );
  assert.equal(problemsOf(report, 'ses_queue'), ['projection_differs@23']);
  assert.match(only('ses_queue')[0]!.reason, 'session_message: the current projector folds a row id=');
  assert.equal(problemsOf(report, 'ses_ghost'), ['projection_differs@0']);
  assert.match(only('ses_ghost')[0]!.reason, 'session_tag: the stored row key="customer" is not in what the current projector folds from the log');
  assert.equal(report.differing.length, 3);

  // a worker that has folded only part of the log: its rows are what the log says at its checkpoint
  const behind = loadSchemaFixture(tamperedFixture(), tmp.file('behind.db'));
  migrate(behind);
  const log = new SqliteEventLog(behind);
  new Projector(behind).apply(await log.readAll({ limit: 60 }));
  await log.close();
  behind.close();
  const partial = await verifyFile(tmp.file('behind.db'));
  assert.ok(partial.ok, JSON.stringify(partial.differing));
  assert.match(partial.notes.join('\n'), 'compared the stored projection at position 60');
  tmp.remove();
});

test.run();
