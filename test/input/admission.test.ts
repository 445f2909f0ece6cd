/**
 * Input: admission idempotent by id, steer inputs joining the running turn at the next step
 * boundary, queue inputs waiting for the next turn, promotion exactly once.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock } from '../../src/clock.ts';
import { ErrorCode } from '../../src/errors.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { auditLog } from '../../src/audit/audit-log.ts';
import { decide, initialSnapshot } from '../../src/machines/decider.ts';
import { ADMISSION_WINDOW } from '../../src/machines/session-context.ts';
import { fixture, gatedRunner, count } from '../support/fixture.ts';
import { commit } from '../support/decider-spec.ts';
import { expectCode } from '../../src/testing/fixtures.ts';

test('admit - an exact retry returns the same receipt; reusing an id with other content is refused', async () => {
  const fx = fixture();
  const a = fx.service({ runner: echoRunner() });
  const first = await fx.admit(a, 'ses_1', { id: 'inp_1', prompt: 'hello', wake: false });
  const retry = await fx.admit(a, 'ses_1', { id: 'inp_1', prompt: 'hello', wake: false });
  assert.equal([first.inputId, first.admittedSeq, first.created], ['inp_1', 1, true]);
  assert.equal([retry.inputId, retry.admittedSeq, retry.created], ['inp_1', 1, false]);
  for (const different of [{ prompt: 'bye' }, { prompt: 'hello', delivery: 'steer' as const }]) {
    await expectCode(
      fx.admit(a, 'ses_1', { id: 'inp_1', wake: false, ...different }),
      ErrorCode.InputConflict,
      'already admitted to session ses_1 with different content',
    );
  }
  assert.is(count(await fx.events('ses_1'), 'input.admitted'), 1);
  await fx.close();
});

test('admit - idempotent within the latest 1,000 admissions and for every pending input; the remembered ids stay bounded', () => {
  // a pure fold over 1,500 admissions (no I/O): the window, and what the guard sees
  let snap = initialSnapshot('ses_window');
  const admit = (inputId: string) => {
    const d = decide(snap, { type: 'admit', now: 0, inputId, prompt: 'p', delivery: 'queue', wake: false });
    if (!d.ok) return d.reason;
    snap = commit(snap, d.events, 0).snapshot;
    return 'admitted';
  };
  for (let i = 0; i < 1_500; i++) assert.is(admit(`inp_${i}`), 'admitted');
  assert.is(snap.context.admitted.length, ADMISSION_WINDOW, 'at most ADMISSION_WINDOW ids are kept');
  assert.is(admit('inp_1499'), 'already_admitted', 'the latest admission is remembered');
  assert.is(admit('inp_0'), 'already_admitted', 'an old admission still pending is remembered through the pending list');
  // as if every input had been promoted: only the window remembers them now
  snap = { ...snap, context: { ...snap.context, pending: [] } };
  assert.is(admit('inp_500'), 'already_admitted', 'the oldest id in the window is remembered, pending or not');
  assert.is(admit('inp_499'), 'admitted', 'an id older than the window and no longer pending is admitted again (documented)');
});

test('admit - bad input is refused with what was wrong', async () => {
  const fx = fixture();
  const a = fx.service({ runner: echoRunner() });
  const cases: [unknown, string][] = [
    [{ prompt: 42 }, 'prompt must be a string'],
    [{ prompt: 'x', delivery: 'later' }, 'delivery must be "steer" or "queue"'],
    [{ prompt: 'x'.repeat(300_000) }, 'over the limit'],
    [{ prompt: 'x', id: 'has space' }, 'Invalid input id'],
  ];
  for (const [req, why] of cases) {
    try {
      await fx.admit(a, 'ses_1', req as never);
      assert.unreachable(why);
    } catch (err) {
      assert.match((err as Error).message, why);
    }
  }
  assert.is((await fx.events('ses_1')).length, 0, 'nothing written');
  await fx.close();
});

test('steer inputs join the running turn at the next step boundary; queue inputs wait for the next turn', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  const a = fx.service({ runner: gate.runner, clock: new ManualClock(0) });
  await fx.admit(a, 'ses_1', { id: 'inp_q1', prompt: 'first', wake: false });
  await fx.admit(a, 'ses_1', { id: 'inp_q2', prompt: 'second (queued)', wake: false });
  await a.resume('ses_1');
  await gate.started(1);
  const ctx = gate.runs[0]!.ctx;
  assert.equal(
    ctx.inputs.map((i) => i.inputId),
    ['inp_q1'],
    'one queue input starts a turn',
  );
  await fx.admit(a, 'ses_1', { id: 'inp_s1', prompt: 'steer me', delivery: 'steer', wake: false });
  await fx.admit(a, 'ses_1', { id: 'inp_q3', prompt: 'third (queued)', wake: false });
  const step = await ctx.startStep();
  assert.equal(
    step.steered.map((i) => i.inputId),
    ['inp_s1'],
    'the steer input joined at the step boundary',
  );
  assert.equal(
    ctx.inputs.map((i) => i.inputId),
    ['inp_q1', 'inp_s1'],
  );
  await ctx.endStep(step.messageId);
  gate.runs[0]!.release();
  await gate.started(2);
  assert.equal(
    gate.runs[1]!.ctx.inputs.map((i) => i.inputId),
    ['inp_q2'],
    'queued inputs wait for their own turn',
  );
  gate.runs[1]!.release();
  await gate.started(3);
  assert.equal(
    gate.runs[2]!.ctx.inputs.map((i) => i.inputId),
    ['inp_q3'],
  );
  gate.runs[2]!.release();
  await a.awaitIdle('ses_1');
  const events = await fx.events('ses_1');
  const promoted = events.filter((e): e is SessionEvent<'input.promoted'> => e.type === 'input.promoted').map((e) => e.payload.inputId);
  assert.equal(promoted, ['inp_q1', 'inp_s1', 'inp_q2', 'inp_q3'], 'each input promoted exactly once, in order');
  assert.equal(auditLog(events), []);
  await fx.close();
});

test('admit - a steer input admitted while idle starts a turn together with the oldest queued one', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  const a = fx.service({ runner: gate.runner });
  await fx.admit(a, 'ses_1', { id: 'inp_q', prompt: 'queued', wake: false });
  await fx.admit(a, 'ses_1', { id: 'inp_s', prompt: 'steer', delivery: 'steer', wake: false });
  await a.resume('ses_1');
  await gate.started(1);
  assert.equal(
    gate.runs[0]!.ctx.inputs.map((i) => i.inputId),
    ['inp_q', 'inp_s'],
  );
  gate.runs[0]!.release();
  await a.awaitIdle('ses_1');
  await fx.close();
});

test.run();
