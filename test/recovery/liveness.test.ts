/**
 * Nothing stranded: the three ways an outside fault run left a queued prompt unrun forever, with
 * real processes where the fault is a crash, plus the storage faults that stopped parts of a worker.
 *
 * 1. the owner dies between a settle and the next claim (frozen, then SIGKILLed);
 * 2. the owner dies mid-turn and its dead execution is cancelled;
 * 3. no crash: the next claim fails with `database is locked` while the worker stays up;
 * and: a locked database does not stop the projector for good; a claim whose write waited past
 * most of its lease renews before running; a continuation runs before prompts admitted earlier.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Database from 'better-sqlite3';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { CommandHandler } from '../../src/execution/command-handler.ts';
import { SessionExecution } from '../../src/execution/session-execution.ts';
import { inputsForTurn } from '../../src/input/turn.ts';
import { admitInput } from '../../src/input/admit.ts';
import { ManualClock, systemClock } from '../../src/clock.ts';
import { randomIds } from '../../src/ids.ts';
import { auditLog } from '../../src/audit/audit-log.ts';
import { Projector } from '../../src/projector/projector.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { waitFor } from '../../src/testing/wait.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { tempDir } from '../support/tmp.ts';
import { spyLog } from '../support/spy-log.ts';
import { closeSharedFiles, sharedFile } from '../support/processes.ts';

const LEASE = { leaseMs: 1_500, heartbeatMs: 400, sweepMs: 300 };
/** The execution service's part of LEASE (a worker process takes sweepMs too). */
const EXEC_LEASE = { leaseMs: LEASE.leaseMs, heartbeatMs: LEASE.heartbeatMs };
/** Lease + sweep + a margin: the liveness bound these tests hold the engine to. */
const BOUND_MS = LEASE.leaseMs + LEASE.sweepMs + 8_000;

async function setup(name: string, prompts: string[]) {
  const fixture = sharedFile(name);
  for (const [i, prompt] of prompts.entries()) await admitInput(fixture.handler, 'ses_l', { id: `inp_${i + 1}`, prompt, wake: true });
  return fixture;
}
test.after.each(closeSharedFiles);

const promotedInputs = (events: SessionEvent[]) => events.flatMap((e) => (e.type === 'input.promoted' ? [e.payload.inputId] : []));

test('liveness - the owner dies between a settle and the next claim: another worker runs the queued prompt', async () => {
  const s = await setup('after-settle', ['first prompt', 'second prompt']);
  const a = s.spawn({ mode: 'work', sessions: ['ses_l'], freezeAfterSettle: true, ...LEASE });
  await a.waitForLine((l) => l === 'FROZEN');
  a.child.kill('SIGKILL');
  await a.exited;
  const b = s.spawn({ mode: 'work', sessions: [], ...LEASE });
  await b.waitForLine((l) => /^SETTLED ses_l \S+ succeeded$/.test(l), BOUND_MS);
  const events = await s.log.readSession('ses_l');
  assert.equal(promotedInputs(events), ['inp_1', 'inp_2'], 'both prompts ran, once each, in order');
  assert.equal(auditLog(events), []);
});

test('liveness - the owner dies mid-turn and its dead execution is cancelled: the prompts queued behind it still run', async () => {
  const s = await setup('cancel-dead', ['first prompt', 'second prompt', 'third prompt']);
  const a = s.spawn({ mode: 'work', runner: 'crash:mid-step', sessions: ['ses_l'], ...LEASE });
  await a.waitForLine((l) => l === 'POINT mid-step');
  a.child.kill('SIGKILL');
  await a.exited;
  const execution = new SessionExecution({ log: s.log, runner: async () => {}, ...EXEC_LEASE });
  const cancelled = await execution.cancel('ses_l', 'its owner is gone');
  assert.ok(cancelled.cancelled, 'the dead execution is cancelled');
  await execution.close();
  const b = s.spawn({ mode: 'work', sessions: [], ...LEASE });
  await waitFor(async () => promotedInputs(await s.log.readSession('ses_l')).length === 3, {
    timeoutMs: BOUND_MS,
    what: 'the second and third prompts to run',
  });
  await b.waitForLine((l) => l.startsWith('SETTLED ses_l'), BOUND_MS);
  const events = await s.log.readSession('ses_l');
  assert.equal(promotedInputs(events), ['inp_1', 'inp_2', 'inp_3']);
  assert.equal(auditLog(events), []);
});

test('liveness - no crash: the next claim fails with "database is locked" and the worker still runs the queued prompt', async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('locked.db'));
  migrate(db);
  let claims = 0;
  const log = spyLog(new SqliteEventLog(db), {
    beforeAppend: (drafts) => {
      if (drafts[0]?.type === 'execution.claimed' && ++claims === 2) throw new Database.SqliteError('database is locked', 'SQLITE_BUSY');
    },
  });
  const notices: string[] = [];
  const execution = new SessionExecution({
    log,
    runner: echoRunner(),
    ...EXEC_LEASE,
    onNotice: (n) => notices.push(`${n.type}${'message' in n ? `: ${n.message}` : ''}`),
  });
  const handler = execution.handler;
  await admitInput(handler, 'ses_l', { id: 'inp_1', prompt: 'first', wake: true });
  await admitInput(handler, 'ses_l', { id: 'inp_2', prompt: 'second', wake: true });
  await execution.resume('ses_l');
  await execution.awaitIdle('ses_l');
  const events = await log.readSession('ses_l');
  assert.is(claims, 3, 'the refused claim was tried again');
  assert.equal(promotedInputs(events), ['inp_1', 'inp_2'], `both ran (notices: ${notices.join(' | ')})`);
  await execution.close();
  db.close();
  tmp.remove();
});

test('liveness - a locked database delays the projector but never stops it', async () => {
  const tmp = tempDir();
  const file = tmp.file('projection.db');
  // the writer: another connection (as another process would be)
  const writerDb = openDatabase(file);
  migrate(writerDb);
  const log = new SqliteEventLog(writerDb);
  const handler = new CommandHandler(log, systemClock, randomIds);
  await admitInput(handler, 'ses_p', { id: 'inp_1', prompt: 'committed before the lock', wake: false });
  // the projection's own connection gives up on a lock quickly
  const db = openDatabase(file, { busyTimeoutMs: 20 });
  const projector = new Projector(db);
  const errors: unknown[] = [];
  // a third connection holds the write lock while the projector starts
  const holder = new Database(file);
  holder.exec('BEGIN IMMEDIATE');
  const following = projector.follow(new SqliteEventLog(db), { onError: (e) => errors.push(e) });
  await new Promise((r) => setTimeout(r, 300));
  holder.exec('COMMIT');
  holder.close();
  await admitInput(handler, 'ses_p', { id: 'inp_2', prompt: 'after the lock', wake: false });
  const head = await log.head();
  await waitFor(() => projector.checkpoint() >= head, {
    timeoutMs: 10_000,
    what: `the projector to catch up after the lock (errors: ${errors.map(String).join(' | ')})`,
  });
  assert.equal(errors, [], 'the lock was waited out, not reported as a stop');
  await following.close();
  await log.close();
  db.close();
  writerDb.close();
  tmp.remove();
});

test('liveness - a claim whose write waited most of its lease renews before the turn runs; nobody recovers it', async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('slow-claim.db'));
  migrate(db);
  const clock = new ManualClock(1_000_000);
  const log = spyLog(new SqliteEventLog(db), {
    beforeAppend: async (drafts) => {
      // the claim's write waits on the disk for 80% of the lease (as behind SQLite's busy timeout)
      if (drafts[0]?.type === 'execution.claimed') await clock.advance(LEASE.leaseMs * 0.8);
    },
  });
  const execution = new SessionExecution({ log, runner: echoRunner(), clock, ...EXEC_LEASE });
  await admitInput(execution.handler, 'ses_s', { id: 'inp_1', prompt: 'slow disk', wake: true });
  await execution.resume('ses_s');
  await execution.awaitIdle('ses_s');
  const events = await log.readSession('ses_s');
  const types = events.map((e) => e.type);
  const claimedAt = types.indexOf('execution.claimed');
  // the claim's one append (claim, start, promotion), then at once a renewal, before any runner write
  assert.equal(
    types.slice(claimedAt, claimedAt + 4),
    ['execution.claimed', 'execution.started', 'input.promoted', 'execution.renewed'],
    `the owner renewed right after the slow claim: ${types.join(', ')}`,
  );
  const renewed = events[claimedAt + 3] as SessionEvent<'execution.renewed'>;
  assert.ok(renewed.payload.expiresAt - renewed.time === LEASE.leaseMs, 'a full lease from the renewal');
  assert.not.ok(types.includes('recovery.started'), 'nobody recovered it');
  assert.ok(types.includes('execution.settled'));
  await execution.close();
  db.close();
  tmp.remove();
});

test('liveness - the continuation of an interrupted turn runs before prompts admitted earlier', () => {
  const pending = [
    { inputId: 'inp_user_2', delivery: 'queue' as const, seq: 4, wake: true, source: 'user' as const, prompt: 'p' },
    { inputId: 'inp_user_3', delivery: 'queue' as const, seq: 5, wake: true, source: 'user' as const, prompt: 'p' },
    { inputId: 'inp_cont_exe_1', delivery: 'queue' as const, seq: 9, wake: true, source: 'recovery' as const, prompt: 'continue' },
  ];
  assert.equal(
    inputsForTurn(pending, 0).map((p) => p.inputId),
    ['inp_cont_exe_1'],
  );
  assert.equal(
    inputsForTurn(pending.slice(0, 2), 0).map((p) => p.inputId),
    ['inp_user_2'],
    'otherwise the oldest queued prompt',
  );
});

test.run();
