/**
 * Session budgets at the model-call boundary: a turn whose session has spent its budget stops before
 * its next model call (`startStep`, `compact`) and settles failed `budget_exceeded`, saying which
 * budget, what was spent and how to raise or reset it; the next prompt's turn stops at once; raising
 * or resetting the budget lets calls go out again. Costs are priced when a step ends.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../../src/errors.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { sessionBudget } from '../../src/sessions/budget.ts';
import { statusOf } from '../../src/sessions/status.ts';
import { fixture } from '../support/fixture.ts';
import { settled, steps, stepsRunner as stepsOf } from './steps.ts';

/** A runner of `n` model steps, each reporting 100 input (40 cached) and 50 output tokens. */
const stepsRunner = (n: number) => stepsOf(n, { inputTokens: 100, outputTokens: 50, cachedInputTokens: 40 });

test('session budget - a turn stops before the model call past its token budget and settles failed budget_exceeded', async () => {
  const fx = fixture();
  const a = fx.service({ runner: stepsRunner(5) });
  await fx.admit(a, 'ses_b', { prompt: 'first', wake: false });
  const set = await sessionBudget(a.handler, 'ses_b', { tokens: 300, actor: 'ops' });
  assert.is(set.changed, true);
  assert.equal(set.budget, { tokens: 300, costUsd: null, spent: { tokens: 0, costUsd: 0 } });
  await a.resume('ses_b');
  await a.awaitIdle('ses_b');
  const events = await fx.events('ses_b');
  assert.is(steps(events), 2, 'two calls of 150 tokens reach 300: the third never starts');
  const s = settled(events)[0]!;
  assert.is(s.payload.outcome, 'failed');
  assert.is(s.payload.error?.type, ErrorCode.BudgetExceeded);
  assert.match(s.payload.error!.message, 'Session ses_b has spent its budget: 300 tokens spent of a tokens budget of 300 tokens');
  assert.match(s.payload.error!.message, 'sessiond budget ses_b --tokens N');
  assert.match(s.payload.error!.message, 'sessiond budget ses_b --reset');
  const status = statusOf(await a.handler.load('ses_b'), 0);
  assert.equal(status.budget, { tokens: 300, costUsd: null, spent: { tokens: 300, costUsd: 0 } });
  assert.equal(status.execution?.usage, { inputTokens: 200, outputTokens: 100, cachedInputTokens: 80 }, 'the turn counts its own tokens');
  assert.equal(events.find((e) => e.type === 'budget.set')?.payload, { tokens: 300, costUsd: null, reset: false, actor: 'ops' });
  await fx.close();
});

test('session budget - the next prompt stops at once, without a model call, until the budget is raised or reset', async () => {
  const fx = fixture();
  const a = fx.service({ runner: stepsRunner(1) });
  await fx.admit(a, 'ses_n', { prompt: 'first', wake: false });
  await a.resume('ses_n');
  await a.awaitIdle('ses_n');
  await sessionBudget(a.handler, 'ses_n', { tokens: 150 });
  await fx.admit(a, 'ses_n', { prompt: 'second', wake: false });
  await a.resume('ses_n');
  await a.awaitIdle('ses_n');
  let events = await fx.events('ses_n');
  assert.is(steps(events), 1, 'no model call for the second prompt');
  assert.is(settled(events)[1]!.payload.error?.type, ErrorCode.BudgetExceeded);

  const raised = await sessionBudget(a.handler, 'ses_n', { tokens: 1000 });
  assert.equal(raised.spent, { tokens: 150, costUsd: 0 });
  await fx.admit(a, 'ses_n', { prompt: 'third', wake: false });
  await a.resume('ses_n');
  await a.awaitIdle('ses_n');
  events = await fx.events('ses_n');
  assert.is(steps(events), 2, 'raised: the call goes out');
  assert.is(settled(events)[2]!.payload.outcome, 'succeeded');

  await sessionBudget(a.handler, 'ses_n', { tokens: 300 });
  await fx.admit(a, 'ses_n', { prompt: 'fourth', wake: false });
  await a.resume('ses_n');
  await a.awaitIdle('ses_n');
  assert.is(settled(await fx.events('ses_n'))[3]!.payload.error?.type, ErrorCode.BudgetExceeded, '300 of 300 spent');
  const reset = await sessionBudget(a.handler, 'ses_n', { reset: true });
  assert.equal(reset.budget, { tokens: 300, costUsd: null, spent: { tokens: 0, costUsd: 0 } }, 'spend counts from the reset');
  assert.equal(reset.usage.inputTokens, 200, 'the usage totals are kept');
  await fx.admit(a, 'ses_n', { prompt: 'fifth', wake: false });
  await a.resume('ses_n');
  await a.awaitIdle('ses_n');
  assert.is(settled(await fx.events('ses_n'))[4]!.payload.outcome, 'succeeded');
  await fx.close();
});

test('session budget - calls are priced when they end, and a cost budget stops the turn', async () => {
  const fx = fixture();
  const prices = { 'm-1': { input: 10, cachedInput: 1, output: 100 } }; // USD per million tokens
  const a = fx.service({ runner: stepsRunner(10), prices });
  await fx.admit(a, 'ses_c', { prompt: 'go', wake: false });
  await sessionBudget(a.handler, 'ses_c', { costUsd: 0.02 });
  await a.resume('ses_c');
  await a.awaitIdle('ses_c');
  const events = await fx.events('ses_c');
  const ended = events.find((e): e is SessionEvent<'step.ended'> => e.type === 'step.ended')!;
  // 60 uncached input at $10, 40 cached at $1, 50 output at $100, per million
  assert.is(ended.payload.usage?.costUsd, 0.00564);
  assert.is(steps(events), 4, '4 calls reach $0.02256: the fifth never starts');
  const s = settled(events)[0]!;
  assert.is(s.payload.error?.type, ErrorCode.BudgetExceeded);
  assert.match(s.payload.error!.message, '$0.02256 spent of a cost budget of $0.02');
  assert.match(s.payload.error!.message, 'sessiond budget ses_c --cost USD');
  await fx.close();
});

test('session budget - bad requests are refused saying what to give; a session with no events is not_found', async () => {
  const fx = fixture();
  const a = fx.service({ runner: stepsRunner(1) });
  await fx.admit(a, 'ses_x', { prompt: 'go', wake: false });
  for (const bad of [{ tokens: -1 }, { tokens: 1.5 }, { costUsd: -0.5 }, { tokens: '5' }, { nope: 1 }] as object[]) {
    const err = await sessionBudget(a.handler, 'ses_x', bad).then(
      () => undefined,
      (e: unknown) => e as { code: string; message: string },
    );
    assert.is(err?.code, ErrorCode.InvalidOption, JSON.stringify(bad));
  }
  const none = await sessionBudget(a.handler, 'ses_none', { tokens: 5 }).catch((e: { code: string }) => e);
  assert.is((none as { code: string }).code, ErrorCode.NotFound);
  const shown = await sessionBudget(a.handler, 'ses_x');
  assert.is(shown.changed, false);
  assert.is(shown.budget, null);
  await fx.close();
});

test.run();
