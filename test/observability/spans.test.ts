/**
 * The spans of a turn (src/observability/tracing.ts), by the GenAI semantic conventions, caught by
 * an in-memory exporter: a turn with parallel tools, an approval wait and its resumed turn, and a
 * recovery with its continuation on another owner. Injected clocks, a real SQLite log.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { ManualClock } from '../../src/clock.ts';
import { RecoverySweeper, continuationIdFor } from '../../src/recovery/sweeper.ts';
import { resolveWait } from '../../src/input/resolve.ts';
import type { Runner } from '../../src/runner/types.ts';
import { fixture, gatedRunner, count } from '../support/fixture.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { traceCounts } from '../../src/observability/trace-counts.ts';

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
test.before.each(() => exporter.reset());

// only this file's sessions (another file's turns may run in the same process)
const spans = () => exporter.getFinishedSpans().filter((s) => String(s.attributes['sessiond.session.id']).startsWith('ses_span'));
const named = (prefix: string) => spans().filter((s) => s.name.startsWith(prefix));
const one = (name: string): ReadableSpan => {
  const found = spans().filter((s) => s.name === name);
  assert.is(found.length, 1, `one ${name} span, not ${found.map((s) => s.name).join(', ')}`);
  return found[0]!;
};
const childOf = (child: ReadableSpan, parent: ReadableSpan) => {
  assert.is(child.parentSpanContext?.spanId, parent.spanContext().spanId, `${child.name} is a child of ${parent.name}`);
  assert.is(child.spanContext().traceId, parent.spanContext().traceId, `${child.name} is in the trace of ${parent.name}`);
};

test('a turn with two tools in parallel: invoke_agent, chat with model and tokens, execute_tool siblings', async () => {
  const fx = fixture();
  const runner: Runner = async (ctx) => {
    const { messageId } = await ctx.startStep();
    const slot = await ctx.modelCall({ provider: 'openai', model: 'gpt-4o' });
    await slot.release();
    await ctx.endStep(messageId, 'tool-calls', { inputTokens: 12, outputTokens: 5 }, 'gpt-4o-2024');
    let bothRunning!: () => void;
    const running = new Promise<void>((r) => (bothRunning = r));
    let started = 0;
    const tool = (name: string, durable: boolean) =>
      ctx.tool(messageId, { name, input: {}, durable, callId: `call_${name}` }, async () => {
        if (++started === 2) bothRunning();
        await running; // both in flight at once
        if (name === 'fails') throw new Error('no such page');
        return 'ok';
      });
    const results = await Promise.allSettled([tool('search', false), tool('fails', true)]);
    assert.is(results[1].status, 'rejected');
    const next = await ctx.startStep();
    await ctx.text(next.messageId, 'done');
    await ctx.endStep(next.messageId, 'stop', { inputTokens: 20, outputTokens: 2 });
  };
  const svc = fx.service({ runner, ownerId: 'own_a' });
  await fx.admit(svc, 'ses_span1', { prompt: 'go', wake: false });
  const r = await svc.resume('ses_span1');
  await svc.awaitIdle('ses_span1');
  const executionId = r.status === 'started' ? r.executionId : '';

  const turn = one('invoke_agent sessiond');
  assert.equal(turn.attributes['gen_ai.operation.name'], 'invoke_agent');
  assert.equal(turn.attributes['gen_ai.conversation.id'], 'ses_span1');
  assert.equal(turn.attributes['sessiond.session.id'], 'ses_span1');
  assert.equal(turn.attributes['sessiond.execution.id'], executionId);
  assert.equal(turn.attributes['sessiond.outcome'], 'succeeded');
  const claimSeq = (await fx.events('ses_span1')).find((e) => e.type === 'execution.claimed')!.seq;
  assert.equal(turn.attributes['sessiond.seq'], claimSeq);

  const claim = one('sessiond.claim');
  assert.equal(claim.attributes['sessiond.seq'], claimSeq);
  assert.equal(claim.attributes['sessiond.execution.id'], executionId);
  assert.equal(claim.attributes['sessiond.outcome'], 'claimed');

  const chats = named('chat');
  assert.equal(
    chats.map((s) => s.name),
    ['chat gpt-4o', 'chat'],
  );
  for (const c of chats) childOf(c, turn);
  assert.equal(chats[0]!.attributes['gen_ai.request.model'], 'gpt-4o');
  assert.equal(chats[0]!.attributes['gen_ai.provider.name'], 'openai');
  assert.equal(chats[0]!.attributes['gen_ai.response.model'], 'gpt-4o-2024');
  assert.equal(chats[0]!.attributes['gen_ai.usage.input_tokens'], 12);
  assert.equal(chats[0]!.attributes['gen_ai.usage.output_tokens'], 5);
  assert.equal(chats[0]!.attributes['gen_ai.response.finish_reasons'], ['tool-calls']);
  assert.equal(chats[1]!.attributes['gen_ai.response.finish_reasons'], ['stop']);

  const tools = named('execute_tool');
  assert.equal(tools.map((s) => s.name).sort(), ['execute_tool fails', 'execute_tool search']);
  for (const t of tools) childOf(t, turn);
  const search = one('execute_tool search');
  const fails = one('execute_tool fails');
  // in parallel: each started before the other ended
  assert.ok(search.startTime[0] * 1e9 + search.startTime[1] <= fails.endTime[0] * 1e9 + fails.endTime[1]);
  assert.ok(fails.startTime[0] * 1e9 + fails.startTime[1] <= search.endTime[0] * 1e9 + search.endTime[1]);
  assert.equal(search.attributes['gen_ai.tool.call.id'], 'call_search');
  assert.equal(search.attributes['sessiond.tool.durable'], false);
  assert.equal(search.attributes['sessiond.outcome'], 'succeeded');
  assert.equal(fails.attributes['sessiond.tool.durable'], true);
  assert.equal(fails.attributes['sessiond.outcome'], 'failed');
  assert.is(fails.status.code, 2, 'error status');
  assert.is(fails.status.message, 'no such page');
  await fx.close();
});

test('an approval: the turn ends waiting with a wait span; the resumed turn runs the call in its own span', async () => {
  const fx = fixture();
  const runner: Runner = async (ctx) => {
    const { messageId } = await ctx.startStep();
    const approved = ctx.waits.find((w) => w.kind === 'approval' && w.outcome === 'approved');
    if (!approved) {
      await ctx.requestApproval(messageId, { name: 'deploy', input: {}, callId: 'call_deploy' });
      await ctx.endStep(messageId, 'tool-calls');
      return;
    }
    await ctx.runApproved(approved.callId!, async () => 'deployed');
    await ctx.endStep(messageId, 'stop');
  };
  const svc = fx.service({ runner, ownerId: 'own_a' });
  await fx.admit(svc, 'ses_span1', { prompt: 'deploy', wake: false });
  await svc.resume('ses_span1');
  await svc.awaitIdle('ses_span1');

  const waiting = one('invoke_agent sessiond');
  assert.equal(waiting.attributes['sessiond.outcome'], 'waiting');
  const wait = one('sessiond.wait approval');
  childOf(wait, waiting);
  assert.equal(wait.attributes['sessiond.wait.name'], 'call_deploy');
  assert.equal(wait.attributes['gen_ai.tool.name'], 'deploy');
  assert.equal(named('execute_tool'), [], 'nothing ran before the decision');
  exporter.reset();

  const resolved = await resolveWait(svc.handler, 'ses_span1', { kind: 'approval', name: 'call_deploy', outcome: 'approved' });
  await svc.resume('ses_span1');
  await svc.awaitIdle('ses_span1');
  const resumed = one('invoke_agent sessiond');
  assert.equal(resumed.attributes['sessiond.outcome'], 'succeeded');
  assert.equal(resumed.attributes['sessiond.input.ids'], [resolved.resumeInputId]);
  const deploy = one('execute_tool deploy');
  childOf(deploy, resumed);
  assert.equal(deploy.attributes['gen_ai.tool.call.id'], 'call_deploy');
  assert.equal(deploy.attributes['sessiond.outcome'], 'succeeded');
  await fx.close();
});

test('a recovery: the sweep has its span, the continuation on another owner says what it continues', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  const a = fx.service({ runner: gate.runner, clock: new ManualClock(0), ownerId: 'own_a' }); // frozen: its clock never moves
  await fx.admit(a, 'ses_span1', { prompt: 'the original prompt', wake: false });
  const r = await a.resume('ses_span1');
  const interrupted = r.status === 'started' ? r.executionId : '';
  await gate.started(1);
  const ctx = gate.runs[0]!.ctx;
  const { messageId } = await ctx.startStep();
  void ctx.tool(messageId, { name: 'search', input: {} }, () => new Promise(() => {})).catch(() => {});
  await waitFor(async () => count(await fx.events('ses_span1'), 'tool.called') === 1, { what: 'the tool to start' });

  const clock = new ManualClock(30_000);
  const b = fx.service({ runner: gate.runner, clock, ownerId: 'own_b' });
  await new RecoverySweeper({ execution: b, candidates: { expired: () => ['ses_span1'], runnable: () => ['ses_span1'], due: () => [] }, clock }).sweep();
  await gate.started(2);
  const recover = one('sessiond.recover');
  assert.equal(recover.attributes['sessiond.session.id'], 'ses_span1');
  assert.equal(recover.attributes['sessiond.execution.id'], interrupted);
  assert.equal(recover.attributes['sessiond.owner.id'], 'own_a');
  assert.equal(recover.attributes['sessiond.continuation.input_id'], continuationIdFor(interrupted));
  assert.equal(recover.attributes['sessiond.outcome'], 'recovered');
  const recovered = (await fx.events('ses_span1')).find((e) => e.type === 'recovery.started')!;
  assert.ok((recover.attributes['sessiond.seq'] as number) >= recovered.seq);

  gate.runs[1]!.release();
  await b.awaitIdle('ses_span1');
  const continuation = spans().find((s) => s.name === 'invoke_agent sessiond' && s.attributes['sessiond.owner.id'] === 'own_b')!;
  assert.equal(continuation.attributes['sessiond.continues.execution_id'], interrupted);
  assert.equal(continuation.attributes['sessiond.input.ids'], [continuationIdFor(interrupted)]);
  assert.equal(continuation.attributes['sessiond.outcome'], 'succeeded');
  // the frozen owner's turn ends when it learns its claim is gone
  gate.runs[0]!.release();
  await a.awaitIdle('ses_span1');
  const lost = spans().find((s) => s.name === 'invoke_agent sessiond' && s.attributes['sessiond.owner.id'] === 'own_a')!;
  assert.equal(lost.attributes['sessiond.outcome'], 'claim_lost');
  const cut = spans().find((s) => s.name === 'chat' && s.attributes['sessiond.execution.id'] === interrupted)!;
  childOf(cut, lost);
  assert.equal(cut.attributes['error.type'], 'interrupted');
  await fx.close();
});

const CALLER = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

test('a caller traceparent given with the input is the parent of the turn; a malformed one is ignored and counted', async () => {
  const fx = fixture();
  const svc = fx.service({ runner: async () => {}, ownerId: 'own_a' });
  await fx.admit(svc, 'ses_span1', { prompt: 'go', wake: false, traceparent: CALLER });
  await svc.resume('ses_span1');
  await svc.awaitIdle('ses_span1');
  const turn = one('invoke_agent sessiond');
  assert.is(turn.spanContext().traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
  assert.is(turn.parentSpanContext?.spanId, '00f067aa0ba902b7');
  childOf(one('sessiond.claim'), turn);
  const events = await fx.events('ses_span1');
  assert.is(events.find((e) => e.type === 'input.admitted')!.payload.traceparent, CALLER);
  const started = events.find((e) => e.type === 'execution.started')!;
  assert.is(started.payload.traceparent, `00-${turn.spanContext().traceId}-${turn.spanContext().spanId}-01`);
  assert.is(started.payload.parentTraceparent, CALLER);
  exporter.reset();

  const before = traceCounts.invalidTraceparent;
  const receipt = await fx.admit(svc, 'ses_span1', { prompt: 'again', wake: false, traceparent: '00-not-a-trace-context' });
  assert.ok(receipt.created, 'admitted all the same');
  assert.is(traceCounts.invalidTraceparent, before + 1);
  await svc.resume('ses_span1');
  await svc.awaitIdle('ses_span1');
  assert.is(one('invoke_agent sessiond').parentSpanContext, undefined, 'a root of its own');
  const admitted = (await fx.events('ses_span1')).filter((e) => e.type === 'input.admitted');
  assert.is(admitted[1]!.payload.traceparent, undefined, 'nothing stored');
  await fx.close();
});

test('through a crash: the continuation on another owner is a child of the caller too, linked to the interrupted turn', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  const a = fx.service({ runner: gate.runner, clock: new ManualClock(0), ownerId: 'own_a' });
  await fx.admit(a, 'ses_span1', { prompt: 'the original prompt', wake: false, traceparent: CALLER });
  await a.resume('ses_span1');
  await gate.started(1);
  const clock = new ManualClock(30_000);
  const b = fx.service({ runner: gate.runner, clock, ownerId: 'own_b' });
  await new RecoverySweeper({ execution: b, candidates: { expired: () => ['ses_span1'], runnable: () => ['ses_span1'], due: () => [] }, clock }).sweep();
  await gate.started(2);
  gate.runs[1]!.release();
  await b.awaitIdle('ses_span1');
  const continuation = spans().find((s) => s.name === 'invoke_agent sessiond' && s.attributes['sessiond.owner.id'] === 'own_b')!;
  assert.is(continuation.parentSpanContext?.spanId, '00f067aa0ba902b7');
  assert.is(continuation.spanContext().traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
  const interruptedTp = (await fx.events('ses_span1')).find((e) => e.type === 'execution.started')!.payload.traceparent!;
  assert.equal(
    continuation.links.map((l) => [l.context.traceId, l.context.spanId, l.attributes?.['sessiond.link']]),
    [[interruptedTp.split('-')[1], interruptedTp.split('-')[2], 'continues']],
  );
  gate.runs[0]!.release();
  await a.awaitIdle('ses_span1');
  const lost = spans().find((s) => s.name === 'invoke_agent sessiond' && s.attributes['sessiond.owner.id'] === 'own_a')!;
  assert.is(lost.spanContext().spanId, interruptedTp.split('-')[2], 'the link names the interrupted turn');
  await fx.close();
});

test.run();
