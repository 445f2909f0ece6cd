/**
 * Durable tools and compaction through the run handle: a call is journaled before its side effect
 * starts; durable calls carry a stable idempotency key; errors are recorded; a context overflow runs
 * a compaction step and the turn continues.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { echoRunner } from '../../src/runner/echo.ts';
import { idempotencyKey } from '../../src/execution/run-context.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import type { Runner } from '../../src/runner/types.ts';
import { fixture, count } from '../support/fixture.ts';

test('tools - journaled before the side effect; result after; durable calls get a stable idempotency key', async () => {
  const fx = fixture();
  const seenInsideTool: string[][] = [];
  const keys: (string | undefined)[] = [];
  const runner: Runner = async (ctx) => {
    const { messageId } = await ctx.startStep();
    const out = await ctx.tool(messageId, { name: 'lookup', input: { q: 'a' }, callId: 'call_1' }, async (tc) => {
      seenInsideTool.push((await fx.events(ctx.sessionId)).map((e) => e.type));
      keys.push(tc.idempotencyKey);
      return { answer: 42 };
    });
    assert.equal(out, { answer: 42 });
    await ctx.tool(messageId, { name: 'send_email', input: { to: 'x' }, durable: true, callId: 'call_2' }, async (tc) => {
      keys.push(tc.idempotencyKey);
      return 'sent';
    });
    await ctx
      .tool(messageId, { name: 'flaky', input: {}, callId: 'call_3' }, async () => {
        throw new TypeError('bad argument');
      })
      .catch(() => {});
    await ctx.endStep(messageId);
  };
  const a = fx.service({ runner });
  await fx.admit(a, 'ses_t', { prompt: 'go', wake: false });
  const r = await a.resume('ses_t');
  await a.awaitIdle('ses_t');
  const executionId = r.status === 'started' ? r.executionId : '';
  const inside = seenInsideTool[0]!;
  assert.equal(inside.slice(-2), ['execution.phase', 'tool.called'], 'journaled (and the phase is unknown) before the side effect ran');
  assert.equal(keys, [undefined, idempotencyKey('ses_t', executionId, 'call_2')]);
  assert.is(idempotencyKey('ses_t', executionId, 'call_2'), `ses_t:${executionId}:call_2`, 'stable: derived from session, execution and call');
  const events = await fx.events('ses_t');
  const called = events.find((e): e is SessionEvent<'tool.called'> => e.type === 'tool.called' && e.payload.callId === 'call_2')!;
  assert.equal([called.payload.durable, called.payload.idempotencyKey], [true, idempotencyKey('ses_t', executionId, 'call_2')]);
  assert.is(called.payload.started, true, 'the call starts in its journal: one event, no tool.started');
  assert.not.ok(events.some((e) => e.type === 'tool.started'));
  const ok = events.find((e): e is SessionEvent<'tool.succeeded'> => e.type === 'tool.succeeded' && e.payload.callId === 'call_1')!;
  assert.equal(ok.payload.output, { answer: 42 });
  const failed = events.find((e): e is SessionEvent<'tool.failed'> => e.type === 'tool.failed')!;
  assert.equal(failed.payload.error, { type: 'tool', name: 'TypeError', message: 'bad argument' });
  await fx.close();
});

test('tools - a tool without input that returns nothing (a void side effect) is journaled and the turn succeeds', async () => {
  const fx = fixture();
  const runner: Runner = async (ctx) => {
    const { messageId } = await ctx.startStep();
    const out = await ctx.tool(messageId, { name: 'notify', input: undefined, durable: true, callId: 'call_v' }, async () => undefined);
    assert.is(out, undefined);
    await ctx.endStep(messageId);
  };
  const a = fx.service({ runner });
  await fx.admit(a, 'ses_void', { prompt: 'go', wake: false });
  await a.resume('ses_void');
  await a.awaitIdle('ses_void');
  const events = await fx.events('ses_void');
  const settled = events.find((e): e is SessionEvent<'execution.settled'> => e.type === 'execution.settled')!;
  assert.is(settled.payload.outcome, 'succeeded', JSON.stringify(settled.payload));
  const ok = events.find((e): e is SessionEvent<'tool.succeeded'> => e.type === 'tool.succeeded')!;
  assert.is(ok.payload.output, undefined, 'undefined is stored as an absent key and reads back as undefined');
  await fx.close();
});

test('compaction - a context overflow runs a compaction step, then the turn continues', async () => {
  const fx = fixture();
  const a = fx.service({ runner: echoRunner({ steps: 3, overflowAtStep: 1 }) });
  await fx.admit(a, 'ses_c', { prompt: 'one two three four five six', wake: false });
  await a.resume('ses_c');
  await a.awaitIdle('ses_c');
  const events = await fx.events('ses_c');
  const order = events.filter((e) => ['step.started', 'compaction.started', 'compaction.completed', 'execution.settled'].includes(e.type)).map((e) => e.type);
  assert.equal(order, ['step.started', 'compaction.started', 'compaction.completed', 'step.started', 'step.started', 'execution.settled']);
  const done = events.find((e): e is SessionEvent<'compaction.completed'> => e.type === 'compaction.completed')!;
  assert.match(done.payload.summary, 'summary of');
  assert.is(count(events, 'step.ended'), 3, 'all three steps ran');
  await fx.close();
});

test.run();
