/**
 * The OpenAI-compatible runner against a local OpenAI-compatible server (src/testing/fake-openai.ts:
 * real HTTP, the real SSE chunk format), through the real client library (the AI SDK): history over
 * turns, streaming and recorded parts, tokens, tools, retries, fatal errors, cancel mid-stream, a
 * stream cut, and context overflow with compaction.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { openEngine, type Engine, type EngineOptions } from '../../src/engine.ts';
import { LocalLiveBus, type LiveEvent } from '../../src/events/live-bus.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import type { Prompt } from '../../src/events/catalog.ts';
import { openaiRunner, type OpenAIRunnerOptions } from '../../src/runner/model/openai.ts';
import { defineTool } from '../../src/runner/model/tools.ts';
import { SUMMARY_PREFIX } from '../../src/runner/model/messages.ts';
import {
  startFakeOpenAI,
  rateLimited,
  serverError,
  contextLengthExceeded,
  messageText,
  type FakeOpenAI,
  type ChatCompletionRequest,
} from '../../src/testing/fake-openai.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { systemClock } from '../../src/clock.ts';
import { tempDir } from '../support/tmp.ts';

const KEY = 'sk-test-key';
const s = suite<{ server: FakeOpenAI; tmp: ReturnType<typeof tempDir>; engines: Engine[]; live: LiveEvent[] }>('openai runner');
s.before(async (ctx) => {
  ctx.tmp = tempDir('sessiond-openai-');
  ctx.engines = [];
  ctx.live = [];
});
// a server per test: its requests are that test's
s.before.each(async (ctx) => {
  ctx.server = await startFakeOpenAI({ apiKey: KEY });
});
s.after.each(async (ctx) => {
  for (const e of ctx.engines.splice(0)) await e.close();
  ctx.live.length = 0;
  await ctx.server.close();
  // (uvu counts a failure here but does not print it: say what was left)
  if (ctx.server.pending !== 0)
    console.error(`${ctx.server.pending} scripted responses unused; requests: ${ctx.server.requests.map((r) => JSON.stringify(r.chat?.messages)).join('\n')}`);
  assert.is(ctx.server.pending, 0, 'every scripted response was used');
});
s.after((ctx) => {
  ctx.tmp.remove();
});

let n = 0;
async function engine(
  ctx: { server: FakeOpenAI; tmp: ReturnType<typeof tempDir>; engines: Engine[]; live: LiveEvent[] },
  options: Partial<OpenAIRunnerOptions> = {},
  more: Partial<EngineOptions> = {},
): Promise<Engine> {
  const bus = new LocalLiveBus();
  bus.subscribe((e) => ctx.live.push(e));
  const e = await openEngine({
    file: ctx.tmp.file(`openai-${++n}.db`),
    bus,
    runner: openaiRunner({
      model: 'fake-model',
      baseURL: ctx.server.url,
      apiKey: KEY,
      retry: { baseDelayMs: 10, maxDelayMs: 200 },
      random: () => 1,
      ...options,
    }),
    ...more,
  });
  ctx.engines.push(e);
  return e;
}

async function turn(e: Engine, sessionId: string, prompt: Prompt): Promise<SessionEvent[]> {
  const before = await e.log.lastSeq(sessionId);
  await e.admit(sessionId, { prompt });
  await e.awaitIdle(sessionId);
  return e.log.readSession(sessionId, { afterSeq: before });
}

const chat = (server: FakeOpenAI, i: number): ChatCompletionRequest => server.requests.filter((r) => r.path.endsWith('/chat/completions'))[i]!.chat!;
const said = (req: ChatCompletionRequest) => req.messages.map((m) => `${m.role}: ${messageText(m)}`);
const settled = (events: SessionEvent[]) => events.find((e): e is SessionEvent<'execution.settled'> => e.type === 'execution.settled')!.payload;

s(
  'a prompt of parts reaches the model as content parts: text, an image by URL and by bytes, a file, JSON as its text; the next turn sends them again',
  async (ctx) => {
    const e = await engine(ctx);
    ctx.server.script({ kind: 'text', text: 'A cat and an invoice.' }, { kind: 'text', text: 'Yes.' });
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).toString('base64');
    const pdf = Buffer.from('%PDF-1.4 invoice').toString('base64');
    const first = await turn(e, 'ses_parts', [
      { type: 'text', text: 'What is in these?' },
      { type: 'image', url: 'https://203.0.113.10/cat.png' },
      { type: 'image', data: png, mediaType: 'image/png' },
      { type: 'file', data: pdf, mediaType: 'application/pdf', filename: 'invoice.pdf' },
      { type: 'json', value: { order: 42 } },
    ]);
    assert.is(settled(first).outcome, 'succeeded');
    await turn(e, 'ses_parts', 'Sure?');
    for (const i of [0, 1]) {
      const user = chat(ctx.server, i).messages.find((m) => m.role === 'user')!;
      assert.ok(Array.isArray(user.content), `request ${i}: the first prompt is sent as parts`);
      const content = user.content as { type: string; text?: string; image_url?: { url: string }; file?: { filename?: string; file_data?: string } }[];
      assert.equal(
        content.map((c) => c.type),
        ['text', 'image_url', 'image_url', 'file', 'text'],
      );
      assert.is(content[0]!.text, 'What is in these?');
      assert.is(content[1]!.image_url!.url, 'https://203.0.113.10/cat.png', 'a URL goes as a URL');
      assert.is(content[2]!.image_url!.url, `data:image/png;base64,${png}`, 'bytes go as a data URL with their media type');
      assert.is(content[3]!.file!.filename, 'invoice.pdf');
      assert.match(content[3]!.file!.file_data!, pdf);
      assert.is(content[4]!.text, '{"order":42}', 'JSON data as its text');
    }
    assert.equal(said(chat(ctx.server, 1)).slice(1), ['assistant: A cat and an invoice.', 'user: Sure?']);
  },
);

s('a conversation over three turns sends its history; text streams live and is recorded; tokens per step and per session', async (ctx) => {
  const e = await engine(ctx, { system: 'You are terse.' });
  ctx.server.script(
    { kind: 'text', text: ['Hel', 'lo ', 'Ada.'], usage: { prompt_tokens: 12, completion_tokens: 3 } },
    { kind: 'text', text: 'Your name is Ada.', reasoning: 'She said so.', usage: { prompt_tokens: 30, completion_tokens: 5, reasoning_tokens: 3 } },
    { kind: 'text', text: 'Bye.', usage: { prompt_tokens: 40, completion_tokens: 1, cached_tokens: 28 } },
  );
  const first = await turn(e, 'ses_chat', 'Hi, I am Ada.');
  assert.is(settled(first).outcome, 'succeeded');
  assert.equal(
    first.filter((x) => x.type === 'text.completed').map((x) => (x as SessionEvent<'text.completed'>).payload.text),
    ['Hello Ada.'],
  );
  assert.equal(
    ctx.live.filter((x) => x.type === 'text.delta').map((x) => (x.payload as { delta: string }).delta),
    ['Hel', 'lo ', 'Ada.'],
    'each delta live, in order',
  );
  await turn(e, 'ses_chat', 'What is my name?');
  await turn(e, 'ses_chat', 'Bye');
  assert.equal(said(chat(ctx.server, 2)), [
    'system: You are terse.',
    'user: Hi, I am Ada.',
    'assistant: Hello Ada.',
    'user: What is my name?',
    'assistant: Your name is Ada.',
    'user: Bye',
  ]);
  assert.equal(chat(ctx.server, 0).model, 'fake-model');
  assert.is(ctx.server.requests[0]!.headers.authorization, `Bearer ${KEY}`);
  const events = await e.log.readSession('ses_chat');
  assert.equal(
    events.filter((x): x is SessionEvent<'reasoning.completed'> => x.type === 'reasoning.completed').map((x) => x.payload.text),
    ['She said so.'],
    'reasoning recorded',
  );
  assert.ok(
    ctx.live.some((x) => x.type === 'reasoning.delta'),
    'reasoning streamed live',
  );
  assert.equal(
    events.filter((x): x is SessionEvent<'step.ended'> => x.type === 'step.ended').map((x) => x.payload.usage),
    [
      { inputTokens: 12, outputTokens: 3 },
      { inputTokens: 30, outputTokens: 5, reasoningTokens: 3 },
      { inputTokens: 40, outputTokens: 1, cachedInputTokens: 28 },
    ],
    'cached and reasoning tokens recorded when the server reports them',
  );
  assert.equal((await e.status('ses_chat')).usage, { inputTokens: 82, outputTokens: 9, cachedInputTokens: 28, reasoningTokens: 3 });
  // the phase is unknown before every request
  const phases = events
    .filter((x) => x.type === 'execution.phase' || x.type === 'step.started')
    .map((x) => (x.type === 'step.started' ? 'step' : (x as SessionEvent<'execution.phase'>).payload.phase));
  assert.equal(phases, ['step', 'unknown', 'step', 'unknown', 'step', 'unknown']);
});

s('tools: two calls in one step run once each, journaled before they run; their results go back to the model; the schema is sent', async (ctx) => {
  const ran: unknown[] = [];
  const tools = {
    weather: defineTool({
      description: 'Current weather in a city',
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => {
        ran.push(city);
        return { city, celsius: city === 'Oslo' ? 3 : 21 };
      },
    }),
    send_postcard: defineTool({
      description: 'Sends a postcard',
      durable: true,
      inputSchema: z.object({ to: z.string() }),
      execute: async ({ to }, tc) => {
        ran.push([to, tc.idempotencyKey]);
        return 'sent';
      },
    }),
  };
  const e = await engine(ctx, { tools });
  ctx.server.script(
    {
      kind: 'toolCalls',
      calls: [
        { id: 'call_w1', name: 'weather', arguments: { city: 'Oslo' } },
        { id: 'call_p1', name: 'send_postcard', arguments: { to: 'Bob' } },
      ],
      usage: { prompt_tokens: 50, completion_tokens: 20 },
    },
    { kind: 'text', text: 'Oslo is 3 degrees; the postcard is sent.' },
  );
  const events = await turn(e, 'ses_tools', 'Weather in Oslo, and send Bob a postcard');
  assert.is(settled(events).outcome, 'succeeded');
  assert.equal(ran, ['Oslo', ['Bob', `ses_tools:${settled(events).executionId}:call_p1`]], 'each tool ran once; the durable one with its key');
  const tools0 = chat(ctx.server, 0).tools!.map((t) => [t.function.name, (t.function.parameters as { properties: object }).properties]);
  assert.equal(
    tools0,
    [
      ['weather', { city: { type: 'string' } }],
      ['send_postcard', { to: { type: 'string' } }],
    ],
    'the zod schemas as JSON schema',
  );
  const second = chat(ctx.server, 1).messages;
  const results = second.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, JSON.parse(messageText(m))]);
  assert.equal(results, [
    ['call_w1', { city: 'Oslo', celsius: 3 }],
    ['call_p1', 'sent'],
  ]);
  const types = events.map((x) => x.type);
  assert.ok(types.indexOf('tool.called') < types.indexOf('tool.succeeded'), 'journaled before the result');
  assert.is(types.filter((t) => t === 'tool.called').length, 2);
});

s('a tool the model calls with bad input, or that throws, gives the model an error result; the turn goes on', async (ctx) => {
  const tools = {
    weather: defineTool({
      description: 'Weather',
      inputSchema: z.object({ city: z.string() }),
      execute: async () => {
        throw new Error('weather service down');
      },
    }),
  };
  const e = await engine(ctx, { tools });
  ctx.server.script(
    {
      kind: 'toolCalls',
      calls: [
        { id: 'call_a', name: 'weather', arguments: { town: 1 } },
        { id: 'call_b', name: 'weather', arguments: { city: 'Rome' } },
      ],
    },
    { kind: 'text', text: 'Sorry.' },
  );
  const events = await turn(e, 'ses_badtool', 'weather?');
  assert.is(settled(events).outcome, 'succeeded');
  const failed = events.filter((x): x is SessionEvent<'tool.failed'> => x.type === 'tool.failed').map((x) => x.payload.error.message);
  assert.is(failed.length, 2);
  assert.match(failed[0]!, /invalid call of weather/);
  assert.match(failed[1]!, 'weather service down');
  const back = chat(ctx.server, 1)
    .messages.filter((m) => m.role === 'tool')
    .map((m) => messageText(m));
  assert.match(back[1]!, 'weather service down');
});

s('a 429 with Retry-After is retried after that delay, each attempt announced live; then the turn succeeds', async (ctx) => {
  const e = await engine(ctx);
  ctx.server.script(rateLimited({ retryAfterMs: 120 }), serverError(), { kind: 'text', text: 'made it' });
  const events = await turn(e, 'ses_429', 'hello');
  assert.is(settled(events).outcome, 'succeeded');
  const retries = ctx.live.filter(
    (x): x is LiveEvent & { payload: { attempt: number; delayMs: number; error: { name: string } } } => x.type === 'model.retry_scheduled',
  );
  assert.equal(
    retries.map((r) => [r.payload.attempt, r.payload.error.name]),
    [
      [1, 'HTTP 429'],
      [2, 'HTTP 500'],
    ],
  );
  assert.is(retries[0]!.payload.delayMs, 120, "the server's Retry-After");
  assert.is(retries[1]!.payload.delayMs, 20, 'backoff: 10 ms doubled (jitter fixed at its top)');
  assert.is(ctx.server.requests.length, 3);
  const phases = events.filter((x) => x.type === 'execution.phase');
  assert.ok(phases.length >= 1, 'phase unknown before the requests');
});

s('a Retry-After longer than maxDelayMs is honoured (sooner would be refused again)', async (ctx) => {
  const e = await engine(ctx); // maxDelayMs 200
  ctx.server.script(rateLimited({ retryAfterMs: 450 }), { kind: 'text', text: 'waited' });
  const events = await turn(e, 'ses_429_long', 'hello');
  assert.is(settled(events).outcome, 'succeeded');
  const retry = ctx.live.find((x): x is LiveEvent & { payload: { delayMs: number } } => x.type === 'model.retry_scheduled' && x.sessionId === 'ses_429_long');
  assert.is(retry?.payload.delayMs, 450, 'the whole Retry-After, not maxDelayMs (200)');
});

s('retries are bounded: a server that keeps failing fails the step and the turn with its message', async (ctx) => {
  const e = await engine(ctx, { retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 } });
  ctx.server.script(serverError('overloaded 1'), serverError('overloaded 2'), serverError('overloaded 3'));
  const events = await turn(e, 'ses_500', 'hello');
  const s1 = settled(events);
  assert.is(s1.outcome, 'failed');
  assert.match(s1.error!.message, 'after 3 attempts: 500 overloaded 3');
  const failed = events.find((x): x is SessionEvent<'step.failed'> => x.type === 'step.failed')!;
  assert.is(failed.payload.error.type, 'model_error');
});

s("a 4xx that is not retryable fails the step at once with the server's message", async (ctx) => {
  const e = await engine(ctx);
  ctx.server.script({ kind: 'error', status: 400, message: 'Invalid value for temperature', type: 'invalid_request_error', code: 'invalid_value' });
  const events = await turn(e, 'ses_400', 'hello');
  assert.is(settled(events).outcome, 'failed');
  assert.match(settled(events).error!.message, '400 Invalid value for temperature');
  assert.is(ctx.server.requests.length, 1, 'not retried');
});

s('a stream cut mid-way is retried; the answer recorded is the complete one', async (ctx) => {
  const e = await engine(ctx);
  ctx.server.script({ kind: 'cut', text: 'half of' }, { kind: 'text', text: 'the whole answer' });
  const events = await turn(e, 'ses_cut', 'hello');
  assert.is(settled(events).outcome, 'succeeded');
  assert.equal(
    events.filter((x): x is SessionEvent<'text.completed'> => x.type === 'text.completed').map((x) => x.payload.text),
    ['the whole answer'],
  );
  assert.equal(ctx.live.filter((x) => x.type === 'model.retry_scheduled').length, 1);
});

s('cancel mid-stream aborts the HTTP request at once; the turn ends cancelled', async (ctx) => {
  const e = await engine(ctx);
  ctx.server.script({ kind: 'hang', text: 'thinking' });
  await e.admit('ses_cancel', { prompt: 'a long question' });
  await ctx.server.waitForRequest(1);
  await waitFor(() => ctx.live.some((x) => x.type === 'text.delta'), { what: 'the first delta' });
  await e.cancel('ses_cancel', 'user stopped it');
  await ctx.server.waitForAborted(1);
  await e.awaitIdle('ses_cancel');
  const events = await e.log.readSession('ses_cancel');
  assert.ok(events.some((x) => x.type === 'execution.cancelled'));
  assert.not.ok(events.some((x) => x.type === 'execution.settled' && x.payload.outcome === 'succeeded'));
});

s(
  'errors as a proxy rewrites them (LiteLLM): an overflow named ContextWindowExceededError with code "400" compacts; a wait only in the words is honoured',
  async (ctx) => {
    const e = await engine(ctx);
    ctx.server.script({ kind: 'text', text: 'First answer.' });
    await turn(e, 'ses_proxy', 'first question');
    ctx.server.script(
      {
        kind: 'error',
        status: 429,
        message: 'litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit reached. Please try again in 150ms. Received Model Group=fake',
        type: 'throttling_error',
        code: '429',
      },
      {
        kind: 'error',
        status: 400,
        message:
          'litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: OpenAIException - The request is over this deployment budget.\nReceived Model Group=fake',
        code: '400',
      },
      { kind: 'text', text: 'They asked one question.' },
      { kind: 'text', text: 'Second answer.' },
    );
    const events = await turn(e, 'ses_proxy', 'second question');
    assert.is(settled(events).outcome, 'succeeded', 'compacted, not failed');
    assert.ok(events.some((x) => x.type === 'compaction.completed'));
    const retry = ctx.live.find((x): x is LiveEvent & { payload: { delayMs: number } } => x.type === 'model.retry_scheduled');
    assert.is(retry?.payload.delayMs, 150, 'the wait named in the message (no Retry-After header came through)');
  },
);

s('a context overflow compacts the older history with the model, then the step runs again on [summary, this prompt]', async (ctx) => {
  const e = await engine(ctx);
  ctx.server.script({ kind: 'text', text: 'First answer.' }, { kind: 'text', text: 'Second answer.' });
  await turn(e, 'ses_over', 'first question');
  await turn(e, 'ses_over', 'second question');
  ctx.server.script(
    contextLengthExceeded(),
    { kind: 'text', text: 'They asked two questions.', usage: { prompt_tokens: 20, completion_tokens: 6 } },
    { kind: 'text', text: 'Third answer.' },
  );
  const events = await turn(e, 'ses_over', 'third question');
  assert.is(settled(events).outcome, 'succeeded');
  const summarize = said(chat(ctx.server, 3));
  assert.equal(summarize.slice(0, 4), ['user: first question', 'assistant: First answer.', 'user: second question', 'assistant: Second answer.']);
  assert.not.ok(
    summarize.some((m) => m.includes('third question')),
    "this turn's prompt is not summarized away",
  );
  assert.equal(said(chat(ctx.server, 4)), [`user: ${SUMMARY_PREFIX}They asked two questions.`, 'user: third question']);
  const completed = events.find((x): x is SessionEvent<'compaction.completed'> => x.type === 'compaction.completed')!;
  assert.equal([completed.payload.summary, completed.payload.usage], ['They asked two questions.', { inputTokens: 20, outputTokens: 6 }]);
  assert.equal(events.find((x): x is SessionEvent<'step.failed'> => x.type === 'step.failed')!.payload.error.type, 'context_overflow');
  // the next turn's history starts from the summary
  ctx.server.script({ kind: 'text', text: 'Fourth.' });
  await turn(e, 'ses_over', 'fourth question');
  assert.equal(said(chat(ctx.server, 5)), [
    `user: ${SUMMARY_PREFIX}They asked two questions.`,
    'user: third question',
    'assistant: Third answer.',
    'user: fourth question',
  ]);
});

s('a configured context window compacts before sending a conversation estimated beyond it', async (ctx) => {
  const e = await engine(ctx, { contextWindow: 45 });
  ctx.server.script({ kind: 'text', text: 'ok' });
  await turn(e, 'ses_window', 'x'.repeat(100));
  ctx.server.script({ kind: 'text', text: 'short summary' }, { kind: 'text', text: 'done' });
  const events = await turn(e, 'ses_window', 'next');
  assert.is(settled(events).outcome, 'succeeded');
  assert.ok(events.some((x) => x.type === 'compaction.completed'));
  assert.equal(said(chat(ctx.server, 2)), [`user: ${SUMMARY_PREFIX}short summary`, 'user: next']);
});

s(
  'sendReasoning within-turn sends a tool loop reasoning back as reasoning_content (a thinking-mode server refuses the loop without it), not an earlier turn',
  async (ctx) => {
    await ctx.server.close();
    ctx.server = await startFakeOpenAI({ apiKey: KEY, requireReasoningContent: true });
    const tools = { lookup: defineTool({ description: 'Look up', inputSchema: z.object({}), execute: async () => 'found' }) };
    const loop = (id: string) => [
      { kind: 'toolCalls' as const, reasoning: `I should look ${id} up.`, calls: [{ id, name: 'lookup', arguments: {} }] },
      { kind: 'text' as const, text: 'Found it.' },
    ];

    // without it (the default) the server refuses the tool loop's second request, and the turn fails with its message
    const plain = await engine(ctx, { tools });
    ctx.server.script(loop('call_p')[0]!);
    const refused = await turn(plain, 'ses_plain', 'look it up');
    assert.is(settled(refused).outcome, 'failed');
    assert.match(settled(refused).error!.message, 'The reasoning_content in the thinking mode must be passed back to the API');

    const e = await engine(ctx, { tools, sendReasoning: 'within-turn' });
    ctx.server.script(...loop('call_1'), ...loop('call_2'));
    assert.is(settled(await turn(e, 'ses_think', 'look it up')).outcome, 'succeeded');
    assert.is(settled(await turn(e, 'ses_think', 'and again')).outcome, 'succeeded');
    const sent = (i: number) =>
      chat(ctx.server, i)
        .messages.filter((m) => m.role === 'assistant')
        .map((m) => m.reasoning_content ?? null);
    // requests 0 and 1 were the refused session's; this session's are 2 to 5
    assert.equal(sent(3), ['I should look call_1 up.'], 'the loop under way carries its reasoning');
    assert.equal(sent(5), [null, null, 'I should look call_2 up.'], "the earlier turn's steps go without theirs");
    assert.throws(
      () => openaiRunner({ model: 'm', baseURL: ctx.server.url, sendReasoning: 'sometimes' as never }),
      /Invalid sendReasoning "sometimes": use never, within-turn, always/,
    );
  },
);

s(
  'the steps go on while the model asks for tools, up to maxSteps model calls; a model still calling tools then fails the turn at its step limit',
  async (ctx) => {
    let calls = 0;
    const tools = { next: defineTool({ description: 'Next', inputSchema: z.object({}), execute: async () => ++calls }) };
    const e = await engine(ctx, { tools, maxSteps: 3 });
    const ask = (id: string) => ({ kind: 'toolCalls' as const, calls: [{ id, name: 'next', arguments: {} }] });
    ctx.server.script(ask('call_1'), ask('call_2'), ask('call_3'));
    const events = await turn(e, 'ses_steps', 'go');
    assert.is(settled(events).outcome, 'failed', 'never a silent success');
    assert.is(settled(events).error?.type, 'step_limit');
    assert.match(settled(events).error!.message, 'The turn stopped at its step limit: 3 model calls (maxSteps, --max-steps)');
    assert.is((await e.status('ses_steps')).execution?.error?.type, 'step_limit');
    assert.is(ctx.server.requests.length, 3, 'three model calls, no fourth');
    assert.is(calls, 3);
    assert.equal(
      events.filter((x): x is SessionEvent<'step.ended'> => x.type === 'step.ended').map((x) => x.payload.finish),
      ['tool-calls', 'tool-calls', 'tool-calls'],
    );
  },
);

s('a lost claim stops the runner and aborts the request in flight', async (ctx) => {
  const e = await engine(ctx, {}, { heartbeatMs: 50 });
  ctx.server.script({ kind: 'hang', text: 'slow' });
  await e.admit('ses_lost', { prompt: 'hello' });
  await ctx.server.waitForRequest(1);
  const executionId = (await e.status('ses_lost')).execution!.id;
  // another worker, whose clock is past the lease, recovers the execution: the owner's next renewal is refused
  const other = await openEngine({ file: e.db.name, runner: async () => {}, clock: { ...systemClock, now: () => Date.now() + 3_600_000 } });
  ctx.engines.push(other);
  await other.execution.handler.execute('ses_lost', (now) => ({ type: 'recover', now, continuationInputId: 'inp_continue' }));
  await ctx.server.waitForAborted(1);
  await e.awaitIdle('ses_lost');
  const events = await e.log.readSession('ses_lost');
  assert.not.ok(
    events.some((x) => x.type === 'execution.settled' && x.payload.executionId === executionId),
    'the lost execution never settles',
  );
  assert.not.ok(
    events.some((x) => x.type === 'text.completed' && x.payload.executionId === executionId),
    'nothing written by the lost execution',
  );
  // (this worker then runs the continuation the recovery admitted: the server's default reply answers it)
});

s.run();
