/**
 * Leases, given/when/then, through the execution service on a real SQLite file. Each service has
 * its own connection (as a separate process would) and its own injected clock. Test titles are
 * the seed's invariants.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock, flushAsync } from '../../src/clock.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { ClaimLostError, CancelledError } from '../../src/errors.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { fixture, gatedRunner, count } from '../support/fixture.ts';

test('never starts a second owner while the lease is live', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  const clock = new ManualClock(0);
  const a = fx.service({ runner: gate.runner, clock, ownerId: 'own_a' });
  const b = fx.service({ runner: gate.runner, clock, ownerId: 'own_b' });
  const aAgain = fx.service({ runner: gate.runner, clock, ownerId: 'own_a' }); // same owner, no runner attached
  await fx.admit(a, 'ses_1', { prompt: 'hi', wake: false });
  const first = await a.resume('ses_1');
  assert.is(first.status, 'started');
  await gate.started(1);
  await clock.advance(29_000);
  const other = await b.resume('ses_1');
  assert.equal([other.status, other.status === 'refused' && other.reason], ['refused', 'lease_live']);
  const sameOwner = await aAgain.resume('ses_1');
  assert.equal([sameOwner.status, sameOwner.status === 'refused' && sameOwner.reason], ['refused', 'own_lease_live']);
  const here = await a.resume('ses_1');
  assert.is(here.status, 'running_here');
  assert.is(gate.runs.length, 1, 'the runner ran once');
  gate.runs[0]!.release();
  await a.awaitIdle('ses_1');
  const events = await fx.events('ses_1');
  assert.is(count(events, 'execution.claimed'), 1);
  assert.is(count(events, 'execution.settled'), 1);
  await fx.close();
});

test('never overwrites an expired lease', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  const frozen = new ManualClock(0); // the owner's clock stops: no heartbeats, as if the process froze
  const now = new ManualClock(0);
  const a = fx.service({ runner: gate.runner, clock: frozen, ownerId: 'own_a' });
  const b = fx.service({ runner: gate.runner, clock: now, ownerId: 'own_b' });
  await fx.admit(a, 'ses_1', { prompt: 'first', wake: false });
  const started = await a.resume('ses_1');
  const staleId = started.status === 'started' ? started.executionId : '';
  await gate.started(1);
  await now.advance(30_001);
  await fx.admit(b, 'ses_1', { prompt: 'second', wake: false });
  const refused = await b.resume('ses_1');
  assert.equal([refused.status, refused.status === 'refused' && refused.reason], ['refused', 'lease_expired']);
  const status = await b.status('ses_1');
  assert.is(status.context.execution!.id, staleId, 'the stale execution keeps its id');
  assert.is(status.context.execution!.ownerId, 'own_a', 'and its owner');
  // recovery takes the stale execution; only then is a new claim a new execution
  await b.handler.execute('ses_1', (now) => ({ type: 'recover', now, continuationInputId: 'inp_continue' }), { fresh: true });
  const next = await b.resume('ses_1');
  assert.is(next.status, 'started');
  const newId = next.status === 'started' ? next.executionId : '';
  assert.is.not(newId, staleId);
  await gate.started(2);
  // the zombie wakes up and tries to finish: refused, its claim is lost
  gate.runs[0]!.release();
  await a.awaitIdle('ses_1');
  gate.runs[1]!.release(); // the continuation
  await gate.started(3);
  gate.runs[2]!.release(); // the second prompt
  await b.awaitIdle('ses_1');
  const events = await fx.events('ses_1');
  const claims = events.filter((e): e is SessionEvent<'execution.claimed'> => e.type === 'execution.claimed');
  assert.equal(
    claims.slice(0, 2).map((c) => [c.payload.executionId, c.payload.ownerId]),
    [
      [staleId, 'own_a'],
      [newId, 'own_b'],
    ],
  );
  const settled = events.filter((e): e is SessionEvent<'execution.settled'> => e.type === 'execution.settled');
  assert.not.ok(
    settled.some((e) => e.payload.executionId === staleId),
    'the zombie settled nothing',
  );
  assert.is(settled.length, 2);
  await fx.close();
});

test('never re-enters its own uncertain live lease', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  const clock = new ManualClock(0);
  const original = fx.service({ runner: gate.runner, clock: new ManualClock(0), ownerId: 'own_a' });
  await fx.admit(original, 'ses_1', { prompt: 'hi', wake: false });
  await original.resume('ses_1');
  await gate.started(1);
  // the same owner, with no local runner attached (e.g. its runner was lost): it must not run again
  const restarted = fx.service({ runner: gate.runner, clock, ownerId: 'own_a' });
  const live = await restarted.resume('ses_1');
  assert.equal([live.status, live.status === 'refused' && live.reason], ['refused', 'own_lease_live']);
  await clock.advance(30_000);
  const expired = await restarted.resume('ses_1');
  assert.equal([expired.status, expired.status === 'refused' && expired.reason], ['refused', 'lease_expired'], 'it waits for expiry and recovery');
  assert.is(gate.runs.length, 1, 'the runner ran once');
  assert.is(count(await fx.events('ses_1'), 'execution.claimed'), 1);
  gate.runs[0]!.release();
  await fx.close();
});

test('never revives an expired claim on heartbeat', async () => {
  const fx = fixture();
  const gate = gatedRunner({ observeAbort: true });
  const clock = new ManualClock(0);
  const a = fx.service({ runner: gate.runner, clock, ownerId: 'own_a' });
  await fx.admit(a, 'ses_1', { prompt: 'hi', wake: false });
  const r = await a.resume('ses_1');
  const executionId = r.status === 'started' ? r.executionId : '';
  await gate.started(1);
  await clock.advance(10_000); // a heartbeat on time renews
  let status = await a.status('ses_1');
  assert.is(status.context.execution!.expiresAt, 40_000);
  // the process freezes past its lease: the next heartbeat fires late
  clock.set(40_000);
  await clock.advance(1);
  const reason = await gate.runs[0]!.aborted;
  assert.instance(reason, ClaimLostError);
  assert.is((reason as Error).message, `Session execution claim lost: ${executionId}`);
  await a.awaitIdle('ses_1');
  const events = await fx.events('ses_1');
  assert.is(count(events, 'execution.renewed'), 1, 'only the on-time renewal');
  assert.is(count(events, 'execution.settled'), 0, 'a lost claim settles nothing');
  status = await a.status('ses_1');
  assert.is(status.context.execution!.expiresAt, 40_000, 'the expired lease was not revived');
  await fx.close();
});

/** An owner running ses_1 (its runner held at the gate) and a user's service on another connection. */
async function runningWithAUser() {
  const fx = fixture();
  const gate = gatedRunner();
  const clock = new ManualClock(0);
  const owner = fx.service({ runner: gate.runner, clock, ownerId: 'own_a' });
  const user = fx.service({ runner: gate.runner, clock, ownerId: 'own_user' });
  await fx.admit(owner, 'ses_1', { prompt: 'hi', wake: false });
  await owner.resume('ses_1');
  await gate.started(1);
  return { fx, gate, owner, user };
}

test('never lets runner settlement overwrite cancellation', async () => {
  for (const late of ['success', 'failure'] as const) {
    const { fx, gate, owner, user } = await runningWithAUser();
    const cancelled = await user.cancel('ses_1', 'user pressed stop'); // from another process: the owner is not told
    assert.is(cancelled.cancelled, true);
    if (late === 'success') gate.runs[0]!.release();
    else gate.runs[0]!.release(new Error('model exploded'));
    await owner.awaitIdle('ses_1');
    const events = await fx.events('ses_1');
    assert.is(count(events, 'execution.cancelled'), 1, late);
    assert.is(count(events, 'execution.settled'), 0, `a late ${late} changes nothing`);
    const status = await owner.status('ses_1');
    assert.is(status.context.execution!.outcome, 'cancelled');
    assert.is(status.value, 'settled');
    await fx.close();
  }
});

test('a remote cancel reaches the runner as CancelledError at its next heartbeat, not as a lost claim', async () => {
  const fx = fixture();
  const gate = gatedRunner({ observeAbort: true });
  const clock = new ManualClock(0);
  const owner = fx.service({ runner: gate.runner, clock, ownerId: 'own_a' });
  const user = fx.service({ runner: gate.runner, clock, ownerId: 'own_user' });
  await fx.admit(owner, 'ses_1', { prompt: 'hi', wake: false });
  const r = await owner.resume('ses_1');
  const executionId = r.status === 'started' ? r.executionId : '';
  await gate.started(1);
  await user.cancel('ses_1', 'user pressed stop'); // from another process: the owner learns it from the log
  await clock.advance(10_000); // the owner's next renew is refused: the execution was cancelled
  const reason = await gate.runs[0]!.aborted;
  assert.instance(reason, CancelledError);
  assert.is((reason as CancelledError).details?.executionId, executionId);
  await owner.awaitIdle('ses_1');
  assert.is(count(await fx.events('ses_1'), 'execution.settled'), 0, 'cancellation wins: nothing settles after it');
  await fx.close();
});

test('a cancel bound to an execution stops only that one: sent late, after its turn ended, it leaves the next turn running', async () => {
  const { fx, gate, owner, user } = await runningWithAUser();
  const first = gate.runs[0]!.ctx.executionId;
  gate.runs[0]!.release();
  await owner.awaitIdle('ses_1');
  await fx.admit(owner, 'ses_1', { prompt: 'the next turn', wake: false });
  await owner.resume('ses_1');
  await gate.started(2);
  const second = gate.runs[1]!.ctx.executionId;
  const late = await user.cancel('ses_1', 'meant for the first turn', first); // e.g. held by a frozen worker
  assert.equal([late.cancelled, late.cancelled ? '' : late.reason], [false, 'nothing_to_cancel']);
  assert.match(late.cancelled ? '' : late.message, `execution ${first} is not the one in progress`);
  assert.not.ok(gate.runs[1]!.ctx.signal.aborted, 'the next turn goes on');
  const meant = await user.cancel('ses_1', 'this one', second);
  assert.equal(meant, { cancelled: true, executionId: second });
  gate.runs[1]!.release(); // the owner is another process: its runner ends, its settlement changes nothing
  await owner.awaitIdle('ses_1');
  assert.is(count(await fx.events('ses_1'), 'execution.cancelled'), 1);
  await fx.close();
});

test('cancellation racing settlement: whichever commits first wins, the other changes nothing', async () => {
  const outcomes = new Set<string>();
  for (const cancelFirst of [true, false]) {
    for (let delay = 0; delay < 4; delay++) {
      const { fx, gate, owner, user } = await runningWithAUser();
      let cancelling: ReturnType<typeof user.cancel> | undefined;
      if (cancelFirst) {
        cancelling = user.cancel('ses_1');
        await flushAsync(delay);
        gate.runs[0]!.release();
      } else {
        gate.runs[0]!.release();
        await flushAsync(delay);
        cancelling = user.cancel('ses_1');
      }
      const result = await cancelling;
      await owner.awaitIdle('ses_1');
      const events = await fx.events('ses_1');
      const terminal = events.filter((e) => e.type === 'execution.cancelled' || e.type === 'execution.settled');
      assert.is(terminal.length, 1, 'exactly one terminal event');
      assert.is(terminal[0]!.type === 'execution.cancelled', result.cancelled, 'cancel reports what happened');
      const status = await owner.status('ses_1');
      assert.is(status.context.execution!.outcome, result.cancelled ? 'cancelled' : 'succeeded');
      outcomes.add(terminal[0]!.type);
      await fx.close();
    }
  }
  assert.equal([...outcomes].sort(), ['execution.cancelled', 'execution.settled'], 'both orders were exercised');
});

test('acquiring a claim snapshots the latest assistant sequence', async () => {
  const fx = fixture();
  const a = fx.service({ runner: echoRunner({ steps: 2 }), ownerId: 'own_a' });
  await fx.admit(a, 'ses_1', { prompt: 'one two three', wake: false });
  await a.resume('ses_1');
  await a.awaitIdle('ses_1');
  await fx.admit(a, 'ses_1', { prompt: 'again', wake: false });
  await a.resume('ses_1');
  await a.awaitIdle('ses_1');
  const events = await fx.events('ses_1');
  const claims = events.filter((e): e is SessionEvent<'execution.claimed'> => e.type === 'execution.claimed');
  assert.is(claims[0]!.payload.assistantSeq, -1, '-1 when there is no assistant message yet');
  const lastStepBefore = events.filter((e) => e.type === 'step.started' && e.seq < claims[1]!.seq).pop()!;
  assert.is(claims[1]!.payload.assistantSeq, lastStepBefore.seq);
  await fx.close();
});

test('lease - 30 s from the claim, renewed every 10 s by the owner', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  const clock = new ManualClock(0);
  const a = fx.service({ runner: gate.runner, clock });
  await fx.admit(a, 'ses_1', { prompt: 'hi', wake: false });
  await a.resume('ses_1');
  await gate.started(1);
  const expiries = async () =>
    (await fx.events('ses_1')).flatMap((e) => (e.type === 'execution.claimed' || e.type === 'execution.renewed' ? [e.payload.expiresAt] : []));
  assert.equal(await expiries(), [30_000]);
  await clock.advance(10_000);
  await clock.advance(10_000);
  assert.equal(await expiries(), [30_000, 40_000, 50_000]);
  gate.runs[0]!.release();
  await a.awaitIdle('ses_1');
  assert.is(clock.pendingTimers, 0, 'the heartbeat stops with the turn');
  await fx.close();
});

test('execution - a local cancel aborts the runner; a failing runner settles failed; close hands back', async () => {
  const fx = fixture();
  const gate = gatedRunner({ observeAbort: true });
  const a = fx.service({ runner: gate.runner });
  await fx.admit(a, 'ses_c', { prompt: 'x', wake: false });
  await a.resume('ses_c');
  await gate.started(1);
  await a.cancel('ses_c');
  assert.instance(await gate.runs[0]!.aborted, CancelledError);
  await a.awaitIdle('ses_c');

  await fx.admit(a, 'ses_f', { prompt: 'x', wake: false });
  await a.resume('ses_f');
  await gate.started(2);
  gate.runs[1]!.release(new Error('model exploded'));
  await a.awaitIdle('ses_f');
  const failed = (await fx.events('ses_f')).find((e): e is SessionEvent<'execution.settled'> => e.type === 'execution.settled')!;
  assert.equal([failed.payload.outcome, failed.payload.error], ['failed', { type: 'unknown', message: 'model exploded', name: 'Error' }]);

  await fx.admit(a, 'ses_r', { prompt: 'x', wake: false });
  await a.resume('ses_r');
  await gate.started(3);
  await a.close();
  const released = (await fx.events('ses_r')).find((e): e is SessionEvent<'execution.settled'> => e.type === 'execution.settled')!;
  assert.is(released.payload.outcome, 'released');
  assert.is((await a.resume('ses_r')).status, 'closed');
  // handing back admits a continuation, so the next worker carries on where this one stopped
  const handback = (await fx.events('ses_r')).filter(
    (e): e is SessionEvent<'input.admitted'> => e.type === 'input.admitted' && e.payload.source === 'recovery',
  );
  assert.equal(
    handback.map((e) => e.payload.inputId),
    [`inp_handback_${released.payload.executionId}`],
  );
  const next = fx.service({ runner: gate.runner });
  assert.is((await next.resume('ses_r')).status, 'started');
  await gate.started(4);
  assert.equal(
    gate.runs[3]!.ctx.inputs.map((i) => i.inputId),
    [handback[0]!.payload.inputId],
  );
  gate.runs[3]!.release();
  await next.awaitIdle('ses_r');
  await fx.close();
});

test('execution - a queued input admitted during a turn runs next without another wake; nothing pending means no claim', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  const a = fx.service({ runner: gate.runner });
  assert.is((await a.resume('ses_q')).status, 'nothing_pending');
  await fx.admit(a, 'ses_q', { prompt: 'first', wake: false });
  await a.resume('ses_q');
  await gate.started(1);
  await fx.admit(a, 'ses_q', { prompt: 'second', wake: false });
  gate.runs[0]!.release();
  await gate.started(2);
  assert.equal(
    gate.runs[1]!.ctx.inputs.map((i) => i.prompt),
    ['second'],
  );
  gate.runs[1]!.release();
  await a.awaitIdle('ses_q');
  assert.is(count(await fx.events('ses_q'), 'execution.claimed'), 2);
  await fx.close();
});

test.run();
