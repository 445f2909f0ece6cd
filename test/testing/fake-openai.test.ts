/**
 * The fake OpenAI-compatible server, driven through the real client: `streamText` / `generateText`
 * from `ai` 6 over `@ai-sdk/openai-compatible` 2, on real HTTP and the real SSE chunk format.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { APICallError, NoOutputGeneratedError, generateText, streamText, tool, type TextStreamPart, type ToolSet, type ModelMessage } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { z } from 'zod';
import { contextLengthExceeded, estimateTokens, rateLimited, serverError, startFakeOpenAI, type FakeOpenAI } from '../../src/testing/fake-openai.ts';

const KEY = 'test-key';
let llm: FakeOpenAI;

test.before.each(async () => {
  llm = await startFakeOpenAI({ apiKey: KEY });
});
test.after.each(async () => {
  await llm.close();
});

/** A chat model on the fake server; `includeUsage` makes the SDK ask for the usage chunk. */
function model(options: { includeUsage?: boolean; apiKey?: string } = {}) {
  return createOpenAICompatible({ name: 'fake', baseURL: llm.url, apiKey: options.apiKey ?? KEY, includeUsage: options.includeUsage ?? true })('fake-model');
}

type Part = TextStreamPart<ToolSet>;
type PartOf<T extends Part['type']> = Extract<Part, { type: T }>;

/** Reads a whole fullStream; a stream that throws (rather than yielding an `error` part) is caught and returned. */
async function drain(result: { fullStream: AsyncIterable<Part> }, onPart?: (part: Part) => void): Promise<{ parts: Part[]; thrown: unknown }> {
  const parts: Part[] = [];
  try {
    for await (const part of result.fullStream) {
      parts.push(part);
      onPart?.(part);
    }
  } catch (err) {
    return { parts, thrown: err };
  }
  return { parts, thrown: undefined };
}

const ofType = <T extends Part['type']>(parts: Part[], type: T) => parts.filter((p): p is PartOf<T> => p.type === type);
const silent = () => {}; // streamText's default onError writes every error to console.error

/** The APICallError a failed call surfaced as an `error` part. */
function apiCallError(parts: Part[]): APICallError {
  const errors = ofType(parts, 'error');
  assert.is(errors.length, 1, `one error part, got ${parts.map((p) => p.type).join(' ')}`);
  const err = errors[0]!.error;
  assert.ok(APICallError.isInstance(err), `an APICallError, got ${String(err)}`);
  return err;
}

async function rejects(p: PromiseLike<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new assert.Assertion({ message: 'expected a rejection', operator: 'rejects', actual: 'resolved', expects: 'rejected', generated: true });
}

test('text deltas arrive in order, reasoning first, and the usage is reported', async () => {
  llm.script({ kind: 'text', reasoning: ['Let me ', 'think.'], text: ['Hel', 'lo', ', ', 'world'], usage: { prompt_tokens: 11, completion_tokens: 7 } });
  const result = streamText({ model: model(), prompt: 'greet me', maxRetries: 0 });
  const { parts, thrown } = await drain(result);
  assert.is(thrown, undefined);

  assert.equal(
    ofType(parts, 'reasoning-delta').map((p) => p.text),
    ['Let me ', 'think.'],
  );
  assert.equal(
    ofType(parts, 'text-delta').map((p) => p.text),
    ['Hel', 'lo', ', ', 'world'],
  );
  assert.ok(parts.findIndex((p) => p.type === 'reasoning-end') < parts.findIndex((p) => p.type === 'text-start'), 'reasoning before text');
  assert.is(await result.text, 'Hello, world');
  assert.is(await result.reasoningText, 'Let me think.');

  const [step] = ofType(parts, 'finish-step');
  assert.is(step?.finishReason, 'stop');
  assert.is(step?.usage.inputTokens, 11);
  assert.is(step?.usage.outputTokens, 7);
  assert.is(step?.usage.totalTokens, 18);
  assert.is(step?.usage.outputTokenDetails.reasoningTokens, estimateTokens('Let me think.'));
  assert.is((await result.totalUsage).outputTokens, 7);

  const body = llm.requests[0]!.chat!;
  assert.is(body.stream, true);
  assert.equal(body.stream_options, { include_usage: true });
});

test('without includeUsage the SDK does not ask for usage, and the server (like OpenAI) sends none', async () => {
  llm.script({ kind: 'text', text: 'no usage here' });
  const result = streamText({ model: model({ includeUsage: false }), prompt: 'hi', maxRetries: 0 });
  const { parts } = await drain(result);
  assert.is(llm.requests[0]!.chat!.stream_options, undefined);
  assert.is(ofType(parts, 'finish-step')[0]?.usage.inputTokens, undefined);
  assert.is(await result.text, 'no usage here');
});

test('a tool call with arguments split over several deltas comes out as one tool call with parsed input, not executed', async () => {
  llm.script({ kind: 'toolCalls', calls: [{ id: 'call_abc', name: 'get_weather', arguments: { city: 'Paris', days: 3 }, argumentChunks: 5 }] });
  const tools = { get_weather: tool({ description: 'Weather for a city', inputSchema: z.object({ city: z.string(), days: z.number() }) }) };
  const result = streamText({ model: model(), prompt: 'weather?', tools, maxRetries: 0 });
  const { parts, thrown } = await drain(result);
  assert.is(thrown, undefined);

  assert.is(ofType(parts, 'tool-input-delta').length, 5, 'each argument fragment arrived as its own delta');
  const calls = ofType(parts, 'tool-call');
  assert.is(calls.length, 1);
  assert.is(calls[0]!.toolCallId, 'call_abc');
  assert.is(calls[0]!.toolName, 'get_weather');
  assert.equal(calls[0]!.input, { city: 'Paris', days: 3 });
  assert.is(ofType(parts, 'tool-result').length, 0, 'a tool without execute is not run');
  assert.is(await result.finishReason, 'tool-calls');
  assert.ok((ofType(parts, 'finish-step')[0]?.usage.outputTokens ?? 0) > 0);
  assert.is(llm.requests.length, 1, 'one step: no follow-up request');
});

test('a 429 with Retry-After surfaces as a retryable APICallError with the headers, when SDK retries are off', async () => {
  llm.script(rateLimited({ retryAfterSeconds: 1, retryAfterMs: 1000 }));
  const result = streamText({ model: model(), prompt: 'hi', maxRetries: 0, onError: silent });
  const { parts, thrown } = await drain(result);
  assert.is(thrown, undefined, 'an HTTP error is an error part, not a throw');

  const err = apiCallError(parts);
  assert.is(err.statusCode, 429);
  assert.is(err.isRetryable, true);
  assert.is(err.responseHeaders?.['retry-after'], '1');
  assert.is(err.responseHeaders?.['retry-after-ms'], '1000');
  assert.equal((err.data as { error: { code: string } }).error.code, 'rate_limit_exceeded');
  assert.is(ofType(parts, 'finish-step').length, 0);
  assert.ok(NoOutputGeneratedError.isInstance(await rejects(result.text)));
  assert.is(llm.requests.length, 1, 'the SDK did not retry');
});

test('with retries on, the SDK waits as retry-after-ms says and retries a 500', async () => {
  llm.script({ ...serverError(), headers: { 'retry-after-ms': '10' } }, { kind: 'text', text: 'second time lucky' });
  const result = streamText({ model: model(), prompt: 'hi', maxRetries: 1, onError: silent });
  assert.is(await result.text, 'second time lucky');
  assert.is(llm.requests.length, 2);
});

test('a 400 context_length_exceeded surfaces with the server message and code, not retryable', async () => {
  llm.script(contextLengthExceeded({ maxTokens: 8192, requestedTokens: 9000 }));
  const result = streamText({ model: model(), prompt: 'a very long conversation', maxRetries: 0, onError: silent });
  const err = apiCallError((await drain(result)).parts);
  assert.is(err.statusCode, 400);
  assert.is(err.isRetryable, false);
  assert.match(err.message, "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.");
  assert.is((err.data as { error: { code: string } }).error.code, 'context_length_exceeded');
  assert.is(JSON.parse(err.responseBody ?? '{}').error.code, 'context_length_exceeded');
});

test('a stream cut mid-way ends in an error (the fullStream throws), not a silent success', async () => {
  llm.script({ kind: 'cut', text: ['partial ', 'reply ', 'never finished'], afterChunks: 2, delayMs: 20 });
  const result = streamText({ model: model(), prompt: 'hi', maxRetries: 0, onError: silent });
  const { parts, thrown } = await drain(result);

  assert.ok(APICallError.isInstance(thrown), `the stream throws an APICallError, got ${String(thrown)}`);
  assert.is(thrown.statusCode, 200, 'the response had started fine');
  assert.is(thrown.isRetryable, true);
  assert.match(String((thrown.cause as Error | undefined)?.message), 'terminated');
  assert.equal(
    ofType(parts, 'text-delta').map((p) => p.text),
    ['partial '],
  );
  assert.is(ofType(parts, 'finish-step').length, 0);
  assert.ok(APICallError.isInstance(await rejects(result.finishReason)));
  assert.is(llm.aborted.length, 0, 'a cut is the server hanging up, not a client abort');
});

test('aborting during a hang closes the HTTP request, and the server records it as aborted', async () => {
  llm.script({ kind: 'hang', text: 'thinking' });
  const controller = new AbortController();
  const result = streamText({ model: model(), prompt: 'hi', maxRetries: 0, abortSignal: controller.signal, onError: silent });
  const { parts, thrown } = await drain(result, (part) => {
    if (part.type === 'text-delta') controller.abort();
  });

  assert.is(thrown, undefined, 'an abort ends the stream with an abort part');
  assert.equal(parts.map((p) => p.type).slice(-2), ['text-delta', 'abort']);
  const aborted = await llm.waitForAborted(1);
  assert.is(aborted.index, 1);
  assert.is(aborted.step?.kind, 'hang');
  assert.ok(llm.requests[0]!.aborted);
  const err = await rejects(result.text);
  assert.is((err as Error).name, 'AbortError');
});

test('SDK trap: aborting mid-stream with a plain Error as the reason surfaces as an APICallError, not an abort', async () => {
  llm.script({ kind: 'hang', text: 'thinking' });
  const controller = new AbortController();
  const result = streamText({ model: model(), prompt: 'hi', maxRetries: 0, abortSignal: controller.signal, onError: silent });
  const { parts, thrown } = await drain(result, (part) => {
    if (part.type === 'text-delta') controller.abort(new Error('cancelled'));
  });
  assert.ok(APICallError.isInstance(thrown), `the stream throws an APICallError, got ${String(thrown)}`);
  assert.is((thrown.cause as Error).message, 'cancelled');
  assert.is(ofType(parts, 'abort').length, 0);
  await llm.waitForAborted(1);
});

test('aborting a slow reply mid-stream stops it and is recorded too', async () => {
  llm.script({ kind: 'text', text: ['one ', 'two ', 'three ', 'four'], delayMs: 50 });
  const controller = new AbortController();
  const result = streamText({ model: model(), prompt: 'count', maxRetries: 0, abortSignal: controller.signal, onError: silent });
  const { parts } = await drain(result, (part) => {
    if (part.type === 'text-delta') controller.abort();
  });
  assert.equal(
    ofType(parts, 'text-delta').map((p) => p.text),
    ['one '],
  );
  assert.is((await llm.waitForAborted(1)).step?.kind, 'text');
});

test('the request carries the conversation (assistant tool calls, tool results) and the tools as JSON schema', async () => {
  const messages: ModelMessage[] = [
    { role: 'user', content: 'What does a.txt say?' },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Reading it.' },
        { type: 'tool-call', toolCallId: 'call_1', toolName: 'read_file', input: { path: 'a.txt' } },
      ],
    },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call_1', toolName: 'read_file', output: { type: 'text', value: 'hello' } }] },
    { role: 'user', content: 'Thanks' },
  ];
  const tools = { read_file: tool({ description: 'Reads a file', inputSchema: z.object({ path: z.string().describe('Path to the file') }) }) };
  const result = streamText({ model: model(), system: 'You are terse.', messages, tools, maxRetries: 0 });
  assert.is(await result.text, 'echo: Thanks');

  const req = llm.requests[0]!;
  assert.is(req.method, 'POST');
  assert.is(req.path, '/v1/chat/completions');
  assert.is(req.headers.authorization, `Bearer ${KEY}`);
  assert.match(String(req.headers['content-type']), 'application/json');
  assert.is(req.chat!.model, 'fake-model');
  assert.equal(req.chat!.messages, [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'What does a.txt say?' },
    {
      role: 'assistant',
      content: 'Reading it.',
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } }],
    },
    { role: 'tool', tool_call_id: 'call_1', content: 'hello' },
    { role: 'user', content: 'Thanks' },
  ]);
  const [sent] = req.chat!.tools ?? [];
  assert.is(sent?.type, 'function');
  assert.is(sent?.function.name, 'read_file');
  assert.is(sent?.function.description, 'Reads a file');
  const schema = sent?.function.parameters as { type: string; properties: Record<string, { type: string; description?: string }>; required: string[] };
  assert.is(schema.type, 'object');
  assert.equal(schema.properties.path, { type: 'string', description: 'Path to the file' });
  assert.equal(schema.required, ['path']);
});

test('with nothing scripted: echo the last user message, "call tool NAME {json}" makes a tool call, stream:false gets JSON', async () => {
  const echo = streamText({ model: model(), prompt: 'hello there', maxRetries: 0 });
  assert.is(await echo.text, 'echo: hello there');
  const usage = await echo.usage;
  assert.is(usage.inputTokens, estimateTokens('hello there'));
  assert.is(usage.outputTokens, estimateTokens('echo: hello there'));

  const tools = { lookup: tool({ inputSchema: z.object({ q: z.string() }) }) };
  const call = streamText({ model: model(), prompt: 'please call tool lookup {"q": "sessions"}', tools, maxRetries: 0 });
  assert.equal(
    (await call.toolCalls).map((c) => [c.toolName, c.input]),
    [['lookup', { q: 'sessions' }]],
  );

  const plain = await generateText({ model: model(), prompt: 'not streamed', maxRetries: 0 });
  assert.is(plain.text, 'echo: not streamed');
  assert.is(plain.usage.inputTokens, estimateTokens('not streamed'));
  assert.is(llm.requests[2]!.chat!.stream, undefined, 'generateText does not ask for a stream');

  const afterTool = await generateText({
    model: model(),
    maxRetries: 0,
    messages: [
      { role: 'user', content: 'call tool lookup {"q": "x"}' },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'lookup', input: { q: 'x' } }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'lookup', output: { type: 'json', value: { hits: 2 } } }] },
    ],
  });
  assert.is(afterTool.text, 'echo: tool result: {"hits":2}', 'after a tool result the echo does not call the tool again');
  assert.is(llm.pending, 0);
});

test('a wrong key gets 401; GET /v1/models lists one model; an unknown path is 404 naming it', async () => {
  const result = streamText({ model: model({ apiKey: 'wrong-key' }), prompt: 'hi', maxRetries: 0, onError: silent });
  const err = apiCallError((await drain(result)).parts);
  assert.is(err.statusCode, 401);
  assert.is(err.isRetryable, false);
  assert.match(err.message, 'Incorrect API key provided');
  assert.is((err.data as { error: { code: string } }).error.code, 'invalid_api_key');

  const auth = { authorization: `Bearer ${KEY}` };
  const models = await fetch(`${llm.url}/models`, { headers: auth });
  assert.is(models.status, 200);
  const list = (await models.json()) as { data: Array<{ id: string }> };
  assert.equal(
    list.data.map((m) => m.id),
    ['fake-model'],
  );

  const missing = await fetch(`${llm.url}/embeddings`, { method: 'POST', headers: auth, body: '{}' });
  assert.is(missing.status, 404);
  assert.match(((await missing.json()) as { error: { message: string } }).error.message, 'Unknown request URL: POST /v1/embeddings');
  assert.equal(
    llm.requests.map((r) => r.path),
    ['/v1/chat/completions', '/v1/models', '/v1/embeddings'],
  );
});

test('waitForRequest resolves on arrival and names what it waited for on timeout', async () => {
  const waiting = llm.waitForRequest(1, 5000);
  void fetch(`${llm.url}/models`, { headers: { authorization: `Bearer ${KEY}` } });
  assert.is((await waiting).path, '/v1/models');
  const err = await rejects(llm.waitForRequest(2, 50));
  assert.match((err as Error).message, 'timed out after 50 ms waiting for request #2; got 1 (#1 GET /v1/models)');
});

test('the CLI prints its URL, serves the echo reply, and stops on SIGTERM', async () => {
  const cli = fileURLToPath(new URL('../../src/testing/fake-openai-cli.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', cli, '--port', '0', '--api-key', 'cli-key'], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the CLI printed no URL within 20 s; stdout: ${stdout}; stderr: ${stderr}`)), 20_000);
      child.stdout.on('data', (d) => {
        stdout += d;
        const m = /^fake OpenAI-compatible server on (http:\/\/\S+\/v1)$/m.exec(stdout);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      child.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the CLI exited (${code}) before printing its URL; stderr: ${stderr}`));
      });
    });
    const provider = createOpenAICompatible({ name: 'cli', baseURL: url, apiKey: 'cli-key', includeUsage: true });
    assert.is(await streamText({ model: provider('m'), prompt: 'from the CLI', maxRetries: 0 }).text, 'echo: from the CLI');
    child.kill('SIGTERM');
    assert.is(await exited, 0, `exit code; stderr: ${stderr}`);
    assert.match(stderr, '#1 POST /v1/chat/completions (1 message, stream)');
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});

test.run();
