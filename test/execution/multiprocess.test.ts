/**
 * Real OS processes on one SQLite file: contention for the same sessions, and an owner killed
 * with SIGKILL mid-turn.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { SessionExecution } from '../../src/execution/session-execution.ts';
import { admitInput } from '../../src/input/admit.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { auditLog } from '../../src/audit/audit-log.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { stateOf } from '../../src/machines/decider.ts';
import { tempDir } from '../support/tmp.ts';
import { spawnWorker } from '../support/processes.ts';

function openLog(file: string) {
  const db = openDatabase(file);
  migrate(db);
  const log = new SqliteEventLog(db);
  return {
    db,
    log,
    close: async () => {
      await log.close();
      db.close();
    },
  };
}

test('two processes on one SQLite file never run a session twice at once, and each turn runs once', async () => {
  const tmp = tempDir();
  const file = tmp.file('shared.db');
  const { log, close } = openLog(file);
  const admin = new SessionExecution({ log, runner: echoRunner() });
  const sessions = Array.from({ length: 6 }, (_, i) => `ses_race${i}`);
  const TURNS = 8;
  for (const s of sessions)
    for (let t = 0; t < TURNS; t++) await admitInput(admin.handler, s, { id: `inp_${s}_${t}`, prompt: `turn ${t} of ${s}`, wake: false });
  const workers = [0, 1].map((i) =>
    spawnWorker({
      file,
      mode: 'contend',
      waitForGo: true,
      meetOthers: true,
      sessions: i === 0 ? sessions : [...sessions].reverse(),
      echoSteps: 2,
      echoDelayMs: 2,
    }),
  );
  await Promise.all(workers.map((w) => w.waitForLine((l) => l.startsWith('READY'))));
  for (const w of workers) w.go();
  const codes = await Promise.all(workers.map((w) => w.exited));
  assert.equal(codes, [0, 0], 'both workers finished cleanly');
  const events = await log.readAll();
  assert.equal(auditLog(events), [], 'no two live leases, no double promotion, no zombie writes');
  const runs = workers.flatMap((w) => w.lines.filter((l) => l.startsWith('RUN ')));
  const ranInputs = runs.flatMap((l) => l.split(' ')[3]!.split(','));
  assert.is(ranInputs.length, sessions.length * TURNS, 'every turn ran');
  assert.is(new Set(ranInputs).size, ranInputs.length, 'no turn ran twice');
  const byWorker = workers.map((w) => w.lines.filter((l) => l.startsWith('RUN ')).length);
  assert.ok(
    byWorker.every((n) => n > 0),
    `both processes ran turns (${byWorker.join(' + ')})`,
  );
  for (const s of sessions) {
    const claims = events.filter((e) => e.sessionId === s && e.type === 'execution.claimed').length;
    assert.is(claims, TURNS, `${s}: one claim per turn`);
  }
  await close();
  tmp.remove();
});

test('an owner killed with SIGKILL mid-turn: its lease expires, the execution stays recoverable, nobody else ran it', async () => {
  const tmp = tempDir();
  const file = tmp.file('killed.db');
  const { log, close } = openLog(file);
  const other = new SessionExecution({ log, runner: echoRunner(), leaseMs: 1_500, heartbeatMs: 500 });
  await admitInput(other.handler, 'ses_kill', { id: 'inp_1', prompt: 'a slow turn that will not finish', wake: false });
  const owner = spawnWorker({ file, mode: 'hold', sessions: ['ses_kill'], leaseMs: 1_500, heartbeatMs: 500, echoDelayMs: 60_000, echoSteps: 2 });
  const claimed = await owner.waitForLine((l) => l.startsWith('CLAIMED '));
  const executionId = claimed.split(' ')[2]!;
  // mid-turn: the first step has started, and a heartbeat has renewed the lease
  await waitFor(async () => (await log.readSession('ses_kill')).some((e) => e.type === 'execution.renewed'), {
    timeoutMs: 10_000,
    what: 'a heartbeat from the owner',
  });
  const during = await other.resume('ses_kill');
  assert.equal([during.status, during.status === 'refused' && during.reason], ['refused', 'lease_live'], 'no takeover while the owner lives');
  owner.child.kill('SIGKILL');
  await owner.exited;
  const killedAt = Date.now();
  const snap = await other.status('ses_kill');
  const expiresAt = snap.context.execution!.expiresAt;
  await waitFor(() => Date.now() > expiresAt, { timeoutMs: 5_000, what: 'the lease to expire' });
  const after = await other.status('ses_kill');
  assert.is(stateOf(after), 'running', 'the killed execution is not settled');
  assert.is(after.context.execution!.id, executionId);
  assert.is(after.context.execution!.phase, 'unknown', 'a model request may have been in flight');
  const attempt = await other.resume('ses_kill');
  assert.equal(
    [attempt.status, attempt.status === 'refused' && attempt.reason],
    ['refused', 'lease_expired'],
    'recoverable: waiting for recovery, not taken over blindly',
  );
  const events = await log.readSession('ses_kill');
  assert.is(events.filter((e) => e.type === 'execution.claimed').length, 1, 'no other process ran it');
  assert.ok(
    events.every((e) => e.time <= killedAt),
    'nothing was written after the kill',
  );
  assert.equal(auditLog(events), []);
  await other.close();
  await close();
  tmp.remove();
});

test.run();
