/**
 * Recovery, with injected clocks and a real SQLite log. Candidates are given directly (as a lagging
 * projection might report them); every decision is the machine's, against the log.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import sinon from 'sinon';
import { ManualClock } from '../../src/clock.ts';
import { RecoverySweeper, continuationIdFor, type RecoveryCandidates } from '../../src/recovery/sweeper.ts';
import type { SessionExecution } from '../../src/execution/session-execution.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { auditLog } from '../../src/audit/audit-log.ts';
import { fixture, gatedRunner, count } from '../support/fixture.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { spyLog } from '../support/spy-log.ts';

const candidates = (sessions: string[]): RecoveryCandidates => ({ expired: () => sessions, runnable: () => sessions, due: () => sessions });

async function ownedThenFrozen(fx: ReturnType<typeof fixture>, gate: ReturnType<typeof gatedRunner>, sessionId = 'ses_1') {
  const a = fx.service({ runner: gate.runner, clock: new ManualClock(0), ownerId: 'own_a' }); // frozen: its clock never moves
  await fx.admit(a, sessionId, { prompt: 'the original prompt', wake: false });
  const runsBefore = gate.runs.length; // the runner may start before resume() returns
  const r = await a.resume(sessionId);
  await gate.started(runsBefore + 1);
  return { a, executionId: r.status === 'started' ? r.executionId : '' };
}

function sweeperFor(svc: SessionExecution, clock: ManualClock, sessions: string[], extra: Partial<ConstructorParameters<typeof RecoverySweeper>[0]> = {}) {
  return new RecoverySweeper({ execution: svc, candidates: candidates(sessions), clock, ...extra });
}

test('never recovers a live execution lease', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  const { executionId } = await ownedThenFrozen(fx, gate);
  const clock = new ManualClock(29_999);
  const b = fx.service({ runner: gate.runner, clock, ownerId: 'own_b' });
  const before = (await fx.events('ses_1')).length;
  const report = await sweeperFor(b, clock, ['ses_1']).sweep();
  assert.equal(report.recovered, []);
  assert.is((await fx.events('ses_1')).length, before, 'nothing written');
  const status = await b.status('ses_1');
  assert.is(status.context.execution!.id, executionId);
  assert.is(status.value, 'running');
  gate.runs[0]!.release();
  await fx.close();
});

test('recovery seals the interrupted step, admits exactly one continuation, and wakes the session', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  const { executionId } = await ownedThenFrozen(fx, gate);
  const ctx = gate.runs[0]!.ctx;
  const { messageId } = await ctx.startStep();
  // two tool calls in flight when the owner freezes: one plain, one durable
  void ctx.tool(messageId, { name: 'search', input: { q: 'x' } }, () => new Promise(() => {})).catch(() => {});
  void ctx.tool(messageId, { name: 'charge_card', input: { cents: 100 }, durable: true }, () => new Promise(() => {})).catch(() => {});
  await waitFor(async () => count(await fx.events('ses_1'), 'tool.called') === 2, { what: 'both tools to start' });
  const clock = new ManualClock(30_000);
  const b = fx.service({ runner: gate.runner, clock, ownerId: 'own_b' });
  const report = await sweeperFor(b, clock, ['ses_1']).sweep();
  assert.equal(report.recovered, ['ses_1']);
  assert.equal(report.woken, ['ses_1']);
  await gate.started(2);
  assert.equal(
    gate.runs[1]!.ctx.inputs.map((i) => i.inputId),
    [continuationIdFor(executionId)],
  );
  // in plain words, no internal ids (the key is in `continues`, below)
  assert.is(
    gate.runs[1]!.ctx.inputs[0]!.prompt,
    'Continue where the previous answer stopped: it was interrupted because the worker running it stopped. The tool calls it was running (charge_card) are run again first.',
  );
  const events = await fx.events('ses_1');
  // what the continuation continues, as data: the interrupted execution, its prompt, its partial
  // answer's message, and the durable call to retry with its key (the plain one is never rerun)
  const charge = events.find((e): e is SessionEvent<'tool.called'> => e.type === 'tool.called' && e.payload.name === 'charge_card')!;
  assert.equal(gate.runs[1]!.ctx.inputs[0]!.continues, {
    executionId,
    reason: 'interrupted',
    phase: 'unknown',
    inputIds: gate.runs[0]!.ctx.inputs.map((i) => i.inputId),
    assistantMessageId: messageId,
    retryTools: [{ callId: charge.payload.callId, messageId, name: 'charge_card', idempotencyKey: charge.payload.idempotencyKey! }],
  });
  // and the continuation's history has the original prompt, the interrupted message, then itself
  const history = await gate.runs[1]!.ctx.history();
  assert.equal(
    history.map((i) => i.type),
    ['user', 'assistant', 'user'],
  );
  assert.equal(history[0], { type: 'user', inputId: gate.runs[0]!.ctx.inputs[0]!.inputId, executionId, text: 'the original prompt', delivery: 'queue' });
  const interrupted = history[1]!;
  assert.ok(interrupted.type === 'assistant' && interrupted.status === 'recovered' && interrupted.messageId === messageId);
  assert.equal(
    interrupted.parts.map((p) => (p.type === 'tool' ? [p.name, p.state, p.error?.type] : p.type)),
    [
      ['search', 'failed', 'interrupted'],
      ['charge_card', 'failed', 'interrupted'],
    ],
  );
  assert.is(history[2]!.type === 'user' && history[2]!.continues?.executionId, executionId);
  const recovered = events.find((e): e is SessionEvent<'step.recovered'> => e.type === 'step.recovered')!;
  assert.is(recovered.payload.messageId, messageId);
  const failed = events.filter((e): e is SessionEvent<'tool.failed'> => e.type === 'tool.failed');
  assert.equal(
    failed.map((e) => [e.payload.error.type, /idempotency key/.test(e.payload.error.message)]),
    [
      ['interrupted', false],
      ['interrupted', true],
    ],
  );
  assert.is(events.filter((e) => e.type === 'input.admitted' && e.payload.source === 'recovery').length, 1);
  const completed = events.find((e): e is SessionEvent<'recovery.completed'> => e.type === 'recovery.completed')!;
  assert.equal([completed.payload.assistantMessageId, completed.payload.phase], [messageId, 'unknown']);
  assert.ok(
    events.some((e) => e.type === 'recovery.wake_delivered'),
    'the claim delivered the wake',
  );
  gate.runs[1]!.release();
  await b.awaitIdle('ses_1');
  assert.equal(auditLog(await fx.events('ses_1')), []);
  gate.runs[0]!.release();
  await fx.close();
});

test('redrives a durable recovery wake after admission', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  const { executionId } = await ownedThenFrozen(fx, gate);
  const clock = new ManualClock(31_000);
  const crashing = fx.service({ runner: gate.runner, clock, ownerId: 'own_b' });
  // the sweeper admits the continuation and "crashes" before waking: its worker never writes the wake attempt
  const log = crashing.handler.log;
  const append = log.append.bind(log);
  log.append = (sessionId, expectedSeq, drafts) =>
    drafts.some((d) => d.type === 'recovery.wake_requested') ? Promise.reject(new Error('crashed before waking')) : append(sessionId, expectedSeq, drafts);
  const crashed = await sweeperFor(crashing, clock, ['ses_1']).sweep();
  assert.equal(crashed.recovered, ['ses_1']);
  assert.equal(
    crashed.errors.map((e) => e.message),
    ['crashed before waking'],
  );
  let events = await fx.events('ses_1');
  assert.is(count(events, 'recovery.completed'), 1);
  assert.is(count(events, 'execution.claimed'), 1, 'not woken yet');
  assert.is((await crashing.status('ses_1')).context.recovery!.wakePending, true, 'the wake is owed, durably');
  // a fresh worker's sweep finds the owed wake and redrives it
  const fresh = fx.service({ runner: gate.runner, clock, ownerId: 'own_c' });
  const report = await sweeperFor(fresh, clock, ['ses_1']).sweep();
  assert.equal(report.woken, ['ses_1']);
  await gate.started(2);
  gate.runs[1]!.release();
  await fresh.awaitIdle('ses_1');
  await sweeperFor(fresh, clock, ['ses_1']).sweep(); // and again: nothing more to do
  events = await fx.events('ses_1');
  assert.is(events.filter((e) => e.type === 'input.admitted' && e.payload.inputId === continuationIdFor(executionId)).length, 1, 'no second continuation');
  assert.is(count(events, 'recovery.wake_requested'), 1);
  assert.is(count(events, 'recovery.wake_delivered'), 1);
  assert.is(count(events, 'execution.claimed'), 2, 'the continuation ran once');
  assert.equal(auditLog(events), []);
  gate.runs[0]!.release();
  await fx.close();
});

test('recovery - two sweepers at once recover an execution once', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  await ownedThenFrozen(fx, gate);
  const clock = new ManualClock(40_000);
  const b = fx.service({ runner: gate.runner, clock, ownerId: 'own_b' });
  const c = fx.service({ runner: gate.runner, clock, ownerId: 'own_c' });
  const reports = await Promise.all([sweeperFor(b, clock, ['ses_1']).sweep(), sweeperFor(c, clock, ['ses_1']).sweep()]);
  assert.is(reports.flatMap((r) => r.recovered).length, 1);
  await gate.started(2);
  const events = await fx.events('ses_1');
  assert.is(count(events, 'recovery.started'), 1);
  assert.is(events.filter((e) => e.type === 'input.admitted' && e.payload.source === 'recovery').length, 1);
  for (const r of gate.runs) r.release();
  await b.awaitIdle('ses_1');
  await c.awaitIdle('ses_1');
  assert.equal(auditLog(await fx.events('ses_1')), []);
  await fx.close();
});

test('recovery - a recovery decided again after a lost race continues the execution it recovers, never the one it first saw', async () => {
  // The sweeper sees execution E1 expired; before its append lands, another worker recovers E1,
  // claims the continuation as E2, and E2's lease runs out too. The sweeper's append conflicts and
  // its recovery is decided again on the fresh state, now of E2: its continuation must be E2's. It
  // was E1's (the id was taken from the first snapshot), admitted a second time, which stopped every
  // worker's projection (the fault suite, seed 20261131).
  const fx = fixture();
  const gate = gatedRunner();
  const { executionId: e1 } = await ownedThenFrozen(fx, gate);
  const clock = new ManualClock(30_000);
  const otherClock = new ManualClock(30_000);
  const other = fx.service({ runner: gate.runner, clock: otherClock, ownerId: 'own_other' });
  let raced = false;
  const db = openDatabase(fx.file);
  const racing = spyLog(new SqliteEventLog(db), {
    beforeAppend: async (drafts) => {
      if (raced || !drafts.some((d) => d.type === 'recovery.started')) return;
      raced = true;
      await sweeperFor(other, otherClock, ['ses_1']).sweep();
      await gate.started(2); // the continuation of E1 runs as E2 on the other worker, and hangs
      clock.set(100_000); // E2's lease (from 30,000, 30 s) is over by the time the sweeper decides again
    },
  });
  const sweeper = fx.service({ runner: gate.runner, clock, ownerId: 'own_sweeper', log: racing });
  const report = await sweeperFor(sweeper, clock, ['ses_1']).sweep();
  assert.ok(raced, 'the race happened');
  assert.equal(report.recovered, ['ses_1']);
  const events = await fx.events('ses_1');
  const e2 = (events.find((e) => e.type === 'execution.claimed' && e.payload.executionId !== e1)!.payload as { executionId: string }).executionId;
  const admitted = events.filter((e) => e.type === 'input.admitted').map((e) => (e.payload as { inputId: string }).inputId);
  assert.equal(
    admitted.filter((id, i) => admitted.indexOf(id) !== i),
    [],
    'no input admitted twice',
  );
  assert.ok(admitted.includes(continuationIdFor(e1)) && admitted.includes(continuationIdFor(e2)), `one continuation each: ${admitted.join(', ')}`);
  for (const r of gate.runs) r.release();
  await fx.close();
  db.close();
});

test('recovery - a cancelled execution is not continued; idle sessions are never woken', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  const { a } = await ownedThenFrozen(fx, gate);
  const clock = new ManualClock(50_000);
  const b = fx.service({ runner: gate.runner, clock, ownerId: 'own_b' });
  await b.cancel('ses_1', 'user stop');
  await fx.admit(b, 'ses_idle', { prompt: 'x', wake: false });
  const report = await sweeperFor(b, clock, ['ses_1', 'ses_idle', 'ses_never_seen']).sweep();
  assert.equal([report.recovered, report.woken], [[], []]);
  const events = await fx.events('ses_1');
  assert.is(count(events, 'input.admitted'), 1, 'no continuation after a cancel');
  assert.is(count(events, 'execution.claimed'), 1);
  assert.is(count(await fx.events('ses_idle'), 'execution.claimed'), 0, 'an idle session was not woken');
  gate.runs[0]!.release();
  await a.awaitIdle('ses_1');
  await fx.close();
});

test('recovery - failed wakes back off, are counted, and park the session with a visible error', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  await ownedThenFrozen(fx, gate);
  const clock = new ManualClock(30_000);
  const b = fx.service({ runner: gate.runner, clock, ownerId: 'own_b' });
  sinon.stub(b, 'resume').rejects(new Error('runner pool exhausted'));
  const sweeper = sweeperFor(b, clock, ['ses_1'], { maxWakeAttempts: 3, wakeBackoffMs: 1_000 });
  await sweeper.sweep(); // recovers + attempt 1 fails
  await sweeper.sweep(); // too early: backoff
  let status = await b.status('ses_1');
  assert.is(status.context.recovery!.attempts, 1);
  assert.equal(status.context.recovery!.lastError, { type: 'unknown', message: 'runner pool exhausted', name: 'Error' });
  await clock.advance(1_000);
  await sweeper.sweep(); // attempt 2
  await clock.advance(2_000);
  await sweeper.sweep(); // attempt 3
  await clock.advance(4_000);
  const report = await sweeper.sweep(); // bound reached: parked
  assert.equal(report.parked, ['ses_1']);
  status = await b.status('ses_1');
  assert.equal([status.context.recovery!.attempts, status.context.recovery!.parked, status.context.recovery!.wakePending], [3, true, false]);
  assert.match(status.context.recovery!.lastError!.message, 'gave up waking session ses_1 after 3 attempts');
  await clock.advance(60_000);
  const after = await sweeper.sweep();
  assert.equal([after.woken, after.parked], [[], []], 'a parked session is left alone');
  const events = await fx.events('ses_1');
  assert.is(count(events, 'recovery.wake_requested'), 3);
  assert.equal(
    events.filter((e): e is SessionEvent<'recovery.wake_failed'> => e.type === 'recovery.wake_failed').map((e) => e.payload.parked),
    [false, false, false, true],
  );
  gate.runs[0]!.release();
  await fx.close();
});

test.run();
