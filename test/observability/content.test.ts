/**
 * Prompt and completion contents on spans, only when the user opts in by the GenAI conventions'
 * switch (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT): the OpenAI-compatible runner against
 * the local fake server (real HTTP, the real client library), spans caught by an in-memory exporter.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { openEngine } from '../../src/engine.ts';
import { openaiRunner } from '../../src/runner/model/openai.ts';
import { defineTool } from '../../src/runner/model/tools.ts';
import { CAPTURE_CONTENT_ENV, contentCaptured } from '../../src/observability/tracing.ts';
import { startFakeOpenAI } from '../../src/testing/fake-openai.ts';
import { tempDir } from '../support/tmp.ts';

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));

const CONTENT = ['gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.system_instructions', 'gen_ai.tool.call.arguments', 'gen_ai.tool.call.result'];

/** One turn: the model calls `weather` for Paris, then answers; the spans of that turn. */
async function weatherTurn(sessionId: string): Promise<ReadableSpan[]> {
  const tmp = tempDir('sessiond-content-');
  const llm = await startFakeOpenAI({ apiKey: 'k' });
  const engine = await openEngine({
    file: tmp.file('c.db'),
    runner: openaiRunner({
      model: 'fake-model',
      baseURL: llm.url,
      apiKey: 'k',
      system: 'You are terse.',
      tools: {
        weather: defineTool({
          description: 'Weather in a city',
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => ({ city, celsius: 14 }),
        }),
      },
    }),
  });
  try {
    llm.script(
      { kind: 'toolCalls', calls: [{ id: 'call_w1', name: 'weather', arguments: { city: 'Paris' } }] },
      { kind: 'text', text: ['It is 14 degrees ', 'in Paris.'] },
    );
    exporter.reset();
    await engine.admit(sessionId, { prompt: 'What is the weather in Paris?' });
    await engine.awaitIdle(sessionId);
    return exporter.getFinishedSpans().filter((s) => s.attributes['sessiond.session.id'] === sessionId);
  } finally {
    await engine.close();
    await llm.close();
    tmp.remove();
  }
}

const chats = (spans: ReadableSpan[]) => spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
const tool = (spans: ReadableSpan[]) => spans.find((s) => s.name === 'execute_tool weather')!;

test("without the switch no span carries a prompt, a completion or a tool call's arguments or result", async () => {
  delete process.env[CAPTURE_CONTENT_ENV];
  const spans = await weatherTurn('ses_quiet');
  assert.is(chats(spans).length, 2, 'two model calls');
  assert.ok(tool(spans), 'the tool call has its span');
  for (const s of spans) for (const key of CONTENT) assert.is(s.attributes[key], undefined, `${s.name} has no ${key}`);
  assert.not.ok(JSON.stringify(spans.map((s) => s.attributes)).includes('Paris'), 'no content anywhere');
});

test('with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: the messages sent and received, by the conventions, and the tool call', async () => {
  process.env[CAPTURE_CONTENT_ENV] = 'true';
  try {
    const spans = await weatherTurn('ses_loud');
    const [first, second] = chats(spans).sort((a, b) => Number(a.attributes['sessiond.step']) - Number(b.attributes['sessiond.step']));
    assert.equal(JSON.parse(String(first!.attributes['gen_ai.system_instructions'])), [{ type: 'text', content: 'You are terse.' }]);
    assert.equal(JSON.parse(String(first!.attributes['gen_ai.input.messages'])), [
      { role: 'user', parts: [{ type: 'text', content: 'What is the weather in Paris?' }] },
    ]);
    assert.equal(JSON.parse(String(first!.attributes['gen_ai.output.messages'])), [
      { role: 'assistant', parts: [{ type: 'tool_call', id: 'call_w1', name: 'weather', arguments: { city: 'Paris' } }], finish_reason: 'tool-calls' },
    ]);
    // the second request sends the call and its result back; the answer is its output
    const sent = JSON.parse(String(second!.attributes['gen_ai.input.messages']));
    assert.equal(sent.slice(1), [
      { role: 'assistant', parts: [{ type: 'tool_call', id: 'call_w1', name: 'weather', arguments: { city: 'Paris' } }] },
      { role: 'tool', parts: [{ type: 'tool_call_response', id: 'call_w1', response: { city: 'Paris', celsius: 14 } }] },
    ]);
    assert.equal(JSON.parse(String(second!.attributes['gen_ai.output.messages'])), [
      { role: 'assistant', parts: [{ type: 'text', content: 'It is 14 degrees in Paris.' }], finish_reason: 'stop' },
    ]);
    const call = tool(spans);
    assert.equal(JSON.parse(String(call.attributes['gen_ai.tool.call.arguments'])), { city: 'Paris' });
    assert.equal(JSON.parse(String(call.attributes['gen_ai.tool.call.result'])), { city: 'Paris', celsius: 14 });
  } finally {
    delete process.env[CAPTURE_CONTENT_ENV];
  }
});

test('the switch: true, span_only and span_and_event turn contents on; anything else (unset, false, event_only) leaves them off', () => {
  for (const on of ['true', 'TRUE', ' span_only ', 'SPAN_AND_EVENT']) assert.ok(contentCaptured({ [CAPTURE_CONTENT_ENV]: on }), on);
  for (const off of [undefined, '', 'false', '1', 'event_only', 'no_content']) assert.not.ok(contentCaptured({ [CAPTURE_CONTENT_ENV]: off }), String(off));
});

test.run();
