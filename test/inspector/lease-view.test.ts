/**
 * The lease panel says what ended a turn, as the events say (views.ts `leaseView`): succeeded,
 * failed with its error, waiting, handed back (settled `released` by a worker shutting down),
 * cancelled; a lease that expired unsettled is `expired` until a recovery completes for it, then
 * recovered. Over real event sequences (the engine, and two owners on one file for the recovery).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock } from '../../src/clock.ts';
import { openEngine } from '../../src/engine.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { hydrate } from '../../src/machines/decider.ts';
import { RecoverySweeper } from '../../src/recovery/sweeper.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import type { Runner } from '../../src/runner/types.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { leaseView } from '../../src/inspector/views.ts';
import { fixture, gatedRunner } from '../support/fixture.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
test.after(() => tmp.remove());

const leaseAt = (sessionId: string, events: readonly SessionEvent[], seq = events.length) => {
  const prefix = events.slice(0, seq);
  return leaseView(hydrate(sessionId, prefix).context, prefix.at(-1)!.time);
};
const endedOf = (sessionId: string, events: readonly SessionEvent[]) => {
  const l = leaseAt(sessionId, events)!;
  return [l.status, l.ended];
};

test('lease view - a turn that succeeded, failed, waits, was handed back or cancelled says so', async () => {
  const runner: Runner = async (ctx) => {
    const prompt = ctx.inputs[0]!.prompt;
    const { messageId } = await ctx.startStep();
    if (prompt === 'fail') throw new Error('the model exploded');
    if (prompt === 'ask') {
      await ctx.requestApproval(messageId, { name: 'send_mail', input: { to: 'bob' } });
      return;
    }
    await ctx.text(messageId, 'fine');
    await ctx.endStep(messageId);
  };
  const engine = await openEngine({ file: tmp.file('ends.db'), runner });
  try {
    for (const [id, prompt] of [
      ['ses_ok', 'hello'],
      ['ses_fail', 'fail'],
      ['ses_wait', 'ask'],
    ] as const) {
      await engine.admit(id, { prompt });
      await engine.awaitIdle(id);
    }
    const read = (id: string) => engine.log.readSession(id);
    assert.equal(endedOf('ses_ok', await read('ses_ok')), ['ended', { outcome: 'succeeded', error: null }]);
    assert.equal(endedOf('ses_fail', await read('ses_fail')), ['ended', { outcome: 'failed', error: 'the model exploded' }]);
    assert.equal(endedOf('ses_wait', await read('ses_wait')), ['ended', { outcome: 'waiting', error: null }]);
    const ok = await read('ses_ok');
    const claimed = ok.find((e) => e.type === 'execution.claimed')!.seq;
    assert.equal([leaseAt('ses_ok', ok, claimed)!.status, leaseAt('ses_ok', ok, claimed)!.ended], ['live', null], 'while it runs, nothing ended it');
  } finally {
    await engine.close();
  }

  const slow = await openEngine({ file: tmp.file('slow.db'), runner: echoRunner({ steps: 1, delayMs: 60_000 }) });
  await slow.admit('ses_hb', { prompt: 'a long turn' });
  await waitFor(async () => (await slow.log.readSession('ses_hb')).some((e) => e.type === 'step.started'), { what: 'the turn to run' });
  await slow.admit('ses_cancel', { prompt: 'another long turn' });
  await waitFor(async () => (await slow.log.readSession('ses_cancel')).some((e) => e.type === 'step.started'), { what: 'the second turn to run' });
  await slow.cancel('ses_cancel', 'enough');
  await slow.awaitIdle('ses_cancel');
  await slow.close(); // hands ses_hb back
  const db = openDatabase(tmp.file('slow.db'), { readonly: true });
  const log = new SqliteEventLog(db);
  try {
    assert.equal(endedOf('ses_hb', await log.readSession('ses_hb')), ['ended', { outcome: 'handed_back', error: null }]);
    assert.equal(endedOf('ses_cancel', await log.readSession('ses_cancel')), ['ended', { outcome: 'cancelled', error: null }]);
  } finally {
    await log.close();
    db.close();
  }
});

test('lease view - a lease that expired unsettled is expired, then recovered once a recovery completed for it', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  try {
    const a = fx.service({ runner: gate.runner, clock: new ManualClock(0), ownerId: 'own_a' });
    await fx.admit(a, 'ses_rec', { prompt: 'the original prompt', wake: false });
    await a.resume('ses_rec');
    await gate.started(1);
    const clock = new ManualClock(30_000);
    const b = fx.service({ runner: gate.runner, clock, ownerId: 'own_b' });
    const all = () => ['ses_rec'];
    await new RecoverySweeper({ execution: b, candidates: { expired: all, runnable: all, due: all }, clock }).sweep();
    await gate.started(2);
    const events = await fx.events('ses_rec');
    const started = events.find((e) => e.type === 'recovery.started')!.seq;
    const completed = events.find((e) => e.type === 'recovery.completed')!.seq;
    const during = leaseAt('ses_rec', events, started)!;
    assert.equal([during.ownerId, during.status, during.ended], ['own_a', 'expired', null]);
    const after = leaseAt('ses_rec', events, completed)!;
    assert.equal([after.ownerId, after.status, after.ended], ['own_a', 'expired', { outcome: 'recovered', error: null }]);
    gate.runs[1]!.release();
    await b.awaitIdle('ses_rec');
    assert.equal(endedOf('ses_rec', await fx.events('ses_rec')), ['ended', { outcome: 'succeeded', error: null }], 'the continuation turn succeeded');
  } finally {
    for (const run of gate.runs) run.release(); // the runners end, so their services can close (also after a failed assertion)
    await fx.close();
  }
});

test.run();
