/**
 * With no tracer provider registered (no OTEL_*, nothing embedding sessiond registered one), a turn
 * builds no span at all: the tracer is never even asked for. The `always` span mode (every call
 * through the API's no-ops, as before) shows the count would see them. No SDK in this process.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { setSpanMode, spansOn } from '../../src/observability/tracing.ts';
import type { Runner } from '../../src/runner/types.ts';
import { fixture } from '../support/fixture.ts';

let tracers = 0;
const getTracer = trace.getTracer.bind(trace);
trace.getTracer = (...args: Parameters<typeof trace.getTracer>) => {
  tracers++;
  return getTracer(...args);
};

const runner: Runner = async (ctx) => {
  const { messageId } = await ctx.startStep();
  await (await ctx.modelCall({ provider: 'openai', model: 'gpt-4o' })).release();
  await ctx.tool(messageId, { name: 'lookup', input: {}, durable: true }, async () => 'ok');
  await ctx.endStep(messageId, 'stop', { inputTokens: 1, outputTokens: 1 });
};

async function turn(sessionId: string): Promise<{ started: Record<string, unknown> }> {
  const fx = fixture();
  const svc = fx.service({ runner });
  await fx.admit(svc, sessionId, { prompt: 'go', wake: false, traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' });
  await svc.resume(sessionId);
  await svc.awaitIdle(sessionId);
  const started = (await fx.events(sessionId)).find((e) => e.type === 'execution.started')!.payload as Record<string, unknown>;
  await fx.close();
  return { started };
}

test('no provider registered: a turn with a model call and a tool asks for no tracer and builds no span; the caller context is still kept', async () => {
  assert.not.ok(spansOn());
  tracers = 0;
  const { started } = await turn('ses_none');
  assert.is(tracers, 0, 'no tracer asked for');
  assert.is(started.traceparent, undefined, 'no span of its own to record');
  assert.is(started.parentTraceparent, '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', "the caller's, for a worker that traces the continuation");
});

test('span mode always: the same turn goes through the API (its no-ops), a tracer asked for each span', async () => {
  const previous = setSpanMode('always');
  try {
    tracers = 0;
    await turn('ses_always');
    assert.ok(tracers >= 4, `a turn, a claim, a chat and a tool span: ${tracers}`);
  } finally {
    setSpanMode(previous);
  }
});

test('a provider registered: spans are made (and span mode never makes none)', () => {
  trace.setGlobalTracerProvider(new BasicTracerProvider());
  try {
    assert.ok(spansOn());
    setSpanMode('never');
    assert.not.ok(spansOn());
  } finally {
    setSpanMode('auto');
    trace.disable();
  }
  assert.not.ok(spansOn(), 'none once it is gone');
});

test.run();
