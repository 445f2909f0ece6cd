/**
 * Turn deadlines (`turnTimeoutMs`): a turn that runs longer has its runner's signal aborted with
 * TurnTimeoutError, then settles failed with a recorded `turn_timeout` error; what it left open
 * (its step, a tool call in flight) fails with it. A runner that ignores its signal does not hold
 * the turn past a short grace. Injected clock; the real-process test is test/cli/turn-timeout.test.ts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock } from '../../src/clock.ts';
import { ErrorCode, TurnTimeoutError } from '../../src/errors.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { TURN_TIMEOUT_GRACE_MS } from '../../src/execution/session-execution.ts';
import type { Runner } from '../../src/runner/types.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { count, fixture } from '../support/fixture.ts';

const settledOf = (events: SessionEvent[]) => events.find((e): e is SessionEvent<'execution.settled'> => e.type === 'execution.settled');

test('turn deadline - the runner is aborted with TurnTimeoutError at the deadline; the turn settles failed with turn_timeout and seals its open step and tool call', async () => {
  const fx = fixture();
  const clock = new ManualClock(0);
  let reason: unknown;
  const runner: Runner = async (ctx) => {
    const { messageId } = await ctx.startStep();
    await ctx.tool(
      messageId,
      { name: 'slow', input: {} },
      () => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
    );
  };
  const wrapped: Runner = (ctx) => {
    ctx.signal.addEventListener('abort', () => (reason = ctx.signal.reason));
    return runner(ctx);
  };
  const a = fx.service({ runner: wrapped, clock, turnTimeoutMs: 60_000 });
  await fx.admit(a, 'ses_d', { prompt: 'go', wake: false });
  await a.resume('ses_d');
  await waitFor(async () => count(await fx.events('ses_d'), 'tool.called') === 1, { what: 'the tool call to start' });
  await clock.advance(59_999);
  assert.is(reason, undefined, 'not before the deadline');
  await clock.advance(1);
  assert.instance(reason, TurnTimeoutError);
  await a.awaitIdle('ses_d');
  const events = await fx.events('ses_d');
  const settled = settledOf(events)!;
  assert.is(settled.payload.outcome, 'failed');
  assert.is(settled.payload.error?.type, ErrorCode.TurnTimeout);
  assert.match(settled.payload.error!.message, 'ran longer than the turn deadline of 60 s');
  const i = events.indexOf(settled);
  assert.equal(
    events.slice(i - 2, i).map((e) => e.type),
    ['tool.failed', 'step.failed'],
    'the open call and step fail with the turn, in its settlement',
  );
  assert.is((await a.status('ses_d')).context.execution!.outcome, 'failed');
  await fx.close();
});

test('turn deadline - a runner that ignores its signal settles failed after the grace; its later writes are refused', async () => {
  const fx = fixture();
  const clock = new ManualClock(0);
  let late: Promise<unknown> | undefined;
  let letGo: (() => void) | undefined;
  const runner: Runner = async (ctx) => {
    const { messageId } = await ctx.startStep();
    await ctx.flush();
    await new Promise<void>((r) => (letGo = r)); // ignores ctx.signal
    late = ctx
      .text(messageId, 'too late', 'prt_late')
      .then(() => ctx.flush())
      .then(
        () => 'written',
        (err: unknown) => err,
      );
  };
  const a = fx.service({ runner, clock, turnTimeoutMs: 5_000 });
  await fx.admit(a, 'ses_i', { prompt: 'go', wake: false });
  await a.resume('ses_i');
  await waitFor(() => letGo !== undefined, { what: 'the step to start' });
  await clock.advance(5_000);
  assert.is(settledOf(await fx.events('ses_i')), undefined, 'the grace first');
  await clock.advance(TURN_TIMEOUT_GRACE_MS);
  await a.awaitIdle('ses_i');
  assert.is(settledOf(await fx.events('ses_i'))?.payload.outcome, 'failed');
  letGo!();
  await waitFor(() => late !== undefined, { what: 'the late write' });
  assert.instance(await late, Error, 'refused: the turn is settled');
  assert.is(count(await fx.events('ses_i'), 'text.completed'), 0, 'nothing the runner writes after the settlement lands');
  await fx.close();
});

test('turn deadline - without one, a long turn is never stopped; a bad value is refused with what to use', async () => {
  const fx = fixture();
  const clock = new ManualClock(0);
  let aborted = false;
  let finish!: () => void;
  const a = fx.service({
    clock,
    runner: (ctx) =>
      new Promise<void>((r) => {
        finish = r;
        ctx.signal.addEventListener('abort', () => (aborted = true));
      }),
  });
  await fx.admit(a, 'ses_n', { prompt: 'go', wake: false });
  await a.resume('ses_n');
  await waitFor(() => finish !== undefined, { what: 'the runner to start' });
  for (let i = 0; i < 36; i++) await clock.advance(10_000); // six minutes of heartbeats
  assert.is(aborted, false);
  finish();
  await a.awaitIdle('ses_n');
  assert.is(settledOf(await fx.events('ses_n'))?.payload.outcome, 'succeeded');
  assert.throws(() => fx.service({ runner: async () => {}, turnTimeoutMs: 0 }), /turnTimeoutMs=0: use a whole number of milliseconds >= 1, or leave it out/);
  await fx.close();
});

test.run();
