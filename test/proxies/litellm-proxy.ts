/**
 * The model runner through a real LiteLLM proxy (`npm run test:proxies`, not part of `npm test`:
 * it needs `litellm[proxy]` from PyPI, which scripts/test-proxies.mjs installs, pinned). A scripted
 * upstream (the local OpenAI-compatible server) behind the proxy: an overflow the proxy renames
 * `ContextWindowExceededError` (code "400") is compacted; a 429's wait that arrives only in the
 * proxy's words is honoured; cached and reasoning tokens the proxy passes through are recorded.
 * The same shapes, without the proxy, are in test/runner/openai.test.ts and classify.test.ts.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { openEngine, type Engine } from '../../src/engine.ts';
import { LocalLiveBus, type LiveEvent } from '../../src/events/live-bus.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { openaiRunner } from '../../src/runner/model/openai.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../src/testing/fake-openai.ts';
import { freePort } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';

const LITELLM = process.env.SESSIOND_LITELLM ?? '.tools/venv-litellm/bin/litellm';

type Ctx = { upstream: FakeOpenAI; proxy: ChildProcess; url: string; tmp: ReturnType<typeof tempDir>; log: string };
const s = suite<Ctx>('through LiteLLM');

s.before(async (ctx) => {
  ctx.tmp = tempDir('sessiond-litellm-');
  ctx.upstream = await startFakeOpenAI({ apiKey: 'sk-upstream' });
  const port = await freePort();
  const config = ctx.tmp.file('litellm.yaml');
  writeFileSync(
    config,
    [
      'model_list:',
      '  - model_name: fake-model',
      '    litellm_params:',
      '      model: openai/fake-model',
      `      api_base: ${ctx.upstream.url}`,
      '      api_key: sk-upstream',
      'litellm_settings:',
      '  num_retries: 0',
      '  request_timeout: 30',
      '',
    ].join('\n'),
  );
  ctx.log = '';
  ctx.proxy = spawn(LITELLM, ['--config', config, '--host', '127.0.0.1', '--port', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
  ctx.proxy.stdout!.on('data', (d) => (ctx.log += d));
  ctx.proxy.stderr!.on('data', (d) => (ctx.log += d));
  ctx.url = `http://127.0.0.1:${port}/v1`;
  await waitFor(
    async () => {
      try {
        return (await fetch(`http://127.0.0.1:${port}/health/liveliness`)).ok;
      } catch {
        return false;
      }
    },
    { timeoutMs: 120_000, intervalMs: 250, what: `the LiteLLM proxy to answer (its output so far: ${ctx.log.slice(-500)})` },
  );
});
s.after.each((ctx) => {
  if (ctx.upstream.pending !== 0) throw new Error(`the test left ${ctx.upstream.pending} scripted upstream responses unused`);
});
s.after(async (ctx) => {
  ctx.proxy?.kill('SIGTERM');
  await ctx.upstream?.close();
  ctx.tmp?.remove();
});

let n = 0;
async function engine(ctx: Ctx, live: LiveEvent[]): Promise<Engine> {
  const bus = new LocalLiveBus();
  bus.subscribe((e) => live.push(e));
  return openEngine({
    file: ctx.tmp.file(`proxy-${++n}.db`),
    bus,
    runner: openaiRunner({ model: 'fake-model', baseURL: ctx.url, apiKey: 'sk-anything', retry: { baseDelayMs: 10, maxDelayMs: 5_000 }, random: () => 1 }),
  });
}

async function turn(e: Engine, sessionId: string, prompt: string): Promise<SessionEvent[]> {
  const before = await e.log.lastSeq(sessionId);
  await e.admit(sessionId, { prompt });
  await e.awaitIdle(sessionId);
  return e.log.readSession(sessionId, { afterSeq: before });
}
const settled = (events: SessionEvent[]) => events.find((e): e is SessionEvent<'execution.settled'> => e.type === 'execution.settled')!.payload;

s('an upstream overflow, renamed ContextWindowExceededError with code "400" by the proxy, is compacted and the turn succeeds', async (ctx) => {
  const e = await engine(ctx, []);
  try {
    ctx.upstream.script({ kind: 'text', text: 'First answer.' });
    await turn(e, 'ses_over', 'first question');
    ctx.upstream.script(
      // a wording LiteLLM knows and names (ContextWindowExceededError), whatever sessiond's own list says
      {
        kind: 'error',
        status: 400,
        message:
          "Invalid 'messages[1].content': string too long. Expected a string with maximum length 10485760, but got a string with length 10485761 instead.",
        type: 'invalid_request_error',
        code: 'string_above_max_length',
      },
      { kind: 'text', text: 'They asked one question.' },
      { kind: 'text', text: 'Second answer.' },
    );
    const events = await turn(e, 'ses_over', 'second question');
    const failed = events.find((x): x is SessionEvent<'step.failed'> => x.type === 'step.failed');
    assert.match(failed?.payload.error.message ?? '', 'ContextWindowExceededError', 'what the proxy answered');
    assert.is(failed?.payload.error.type, 'context_overflow');
    assert.is(settled(events).outcome, 'succeeded');
    assert.ok(events.some((x) => x.type === 'compaction.completed'));
  } finally {
    await e.close();
  }
});

s("a 429's wait is honoured though the proxy drops the Retry-After header", async (ctx) => {
  const live: LiveEvent[] = [];
  const e = await engine(ctx, live);
  try {
    ctx.upstream.script(
      {
        kind: 'error',
        status: 429,
        message: 'Rate limit reached for requests. Please try again in 2s.',
        type: 'requests',
        code: 'rate_limit_exceeded',
        headers: { 'retry-after': '2' },
      },
      { kind: 'text', text: 'Made it.' },
    );
    const events = await turn(e, 'ses_429', 'hello');
    assert.is(settled(events).outcome, 'succeeded');
    const retry = live.find((x): x is LiveEvent & { payload: { delayMs: number } } => x.type === 'model.retry_scheduled');
    assert.is(retry?.payload.delayMs, 2_000, 'the upstream asked for 2 s');
  } finally {
    await e.close();
  }
});

s('cached and reasoning tokens the proxy passes through are recorded', async (ctx) => {
  const e = await engine(ctx, []);
  try {
    ctx.upstream.script({
      kind: 'text',
      text: 'Yes.',
      reasoning: 'Short.',
      usage: { prompt_tokens: 120, completion_tokens: 9, cached_tokens: 100, reasoning_tokens: 4 },
    });
    const events = await turn(e, 'ses_usage', 'tokens?');
    const usage = events.find((x): x is SessionEvent<'step.ended'> => x.type === 'step.ended')?.payload.usage;
    assert.equal(usage, { inputTokens: 120, outputTokens: 9, cachedInputTokens: 100, reasoningTokens: 4 });
  } finally {
    await e.close();
  }
});

s.run();
