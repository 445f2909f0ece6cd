/**
 * The tool calls of one model response run at once (the model runner against the local
 * OpenAI-compatible server, on the embedded engine): journaled in one append, run concurrently
 * within `maxParallelTools`, results sent back in the model's call order; a gated call waits while
 * the others run; a cancel aborts every running call of the batch.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { openEngine, type Engine } from '../../src/engine.ts';
import type { DraftEvent, SessionEvent } from '../../src/events/envelope.ts';
import { openaiRunner, type OpenAIRunnerOptions } from '../../src/runner/model/openai.ts';
import { defineTool, type ToolRegistry } from '../../src/runner/model/tools.ts';
import { startFakeOpenAI, type FakeOpenAI, type ScriptStep } from '../../src/testing/fake-openai.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';
import { spyLog } from '../support/spy-log.ts';

const KEY = 'sk-test-key';
type Ctx = { server: FakeOpenAI; tmp: ReturnType<typeof tempDir>; engines: Engine[]; appends: string[][] };
const s = suite<Ctx>('parallel tools');
s.before((ctx) => {
  ctx.tmp = tempDir('sessiond-parallel-');
  ctx.engines = [];
});
s.before.each(async (ctx) => {
  ctx.server = await startFakeOpenAI({ apiKey: KEY });
  ctx.appends = [];
});
s.after.each(async (ctx) => {
  for (const e of ctx.engines.splice(0)) await e.close();
  await ctx.server.close();
  if (ctx.server.pending !== 0) console.error(`${ctx.server.pending} scripted responses unused`);
});
s.after((ctx) => ctx.tmp.remove());

let n = 0;
async function engine(ctx: Ctx, tools: ToolRegistry, options: Partial<OpenAIRunnerOptions> = {}): Promise<Engine> {
  const file = ctx.tmp.file(`parallel-${++n}.db`);
  const db = openDatabase(file);
  migrate(db);
  const log = spyLog(new SqliteEventLog(db), { beforeAppend: (drafts: DraftEvent[]) => void ctx.appends.push(drafts.map((d) => d.type)) });
  const e = await openEngine({
    file,
    log,
    runner: openaiRunner({ model: 'fake-model', baseURL: ctx.server.url, apiKey: KEY, tools, retry: { baseDelayMs: 10, maxDelayMs: 50 }, ...options }),
  });
  ctx.engines.push(e);
  return e;
}

const calls = (names: string[]): ScriptStep => ({
  kind: 'toolCalls',
  calls: names.map((name, i) => ({ id: `call_${i}`, name, arguments: { n: i } })),
});

/** The tool results the model's `i`-th request carried, in order: [call id, content]. */
function toolResults(server: FakeOpenAI, i: number): [string, string][] {
  const chat = server.requests.filter((r) => r.path.endsWith('/chat/completions'))[i]!.chat!;
  return chat.messages
    .filter((m) => m.role === 'tool')
    .map((m) => [(m as { tool_call_id: string }).tool_call_id, typeof m.content === 'string' ? m.content : JSON.stringify(m.content)]);
}

/** Resolves when `count` tools have started; rejects after `ms` (one at a time, they never all start). */
function rendezvous(count: number, ms = 5_000) {
  let started = 0;
  let open: () => void;
  const all = new Promise<void>((resolve) => (open = resolve));
  return async () => {
    if (++started === count) open();
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([all, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`only ${started} of ${count} tools ran at once`)), ms)))]);
    clearTimeout(timer);
  };
}

s('two calls of one response run at once, journaled in one append; the model gets the results in its call order', async (ctx) => {
  const meet = rendezvous(2);
  let slowDone = false;
  const tools = {
    slow: defineTool({
      description: 'finishes last',
      inputSchema: z.object({ n: z.number() }),
      execute: async () => {
        await meet();
        await waitFor(() => fastDone, { timeoutMs: 5_000, what: 'the fast tool to finish first' });
        slowDone = true;
        return 'slow result';
      },
    }),
    fast: defineTool({
      description: 'finishes first',
      inputSchema: z.object({ n: z.number() }),
      execute: async () => {
        await meet();
        fastDone = true;
        return 'fast result';
      },
    }),
  };
  let fastDone = false;
  const e = await engine(ctx, tools);
  ctx.server.script(calls(['slow', 'fast']), { kind: 'text', text: 'Both done.' });
  await e.admit('ses_par', { prompt: 'do both' });
  await e.awaitIdle('ses_par');
  assert.ok(slowDone);
  assert.is((await e.status('ses_par')).outcome, 'succeeded');
  assert.equal(toolResults(ctx.server, 1), [
    ['call_0', '"slow result"'],
    ['call_1', '"fast result"'],
  ]);
  const journals = ctx.appends.filter((a) => a.includes('tool.called'));
  assert.is(journals.length, 1, `one append journals the batch (appends: ${JSON.stringify(ctx.appends)})`);
  assert.is(journals[0]!.filter((t) => t === 'tool.called').length, 2);
  const events = await e.log.readSession('ses_par');
  const results = events.filter((x) => x.type === 'tool.succeeded').map((x) => (x as SessionEvent<'tool.succeeded'>).payload.callId);
  assert.equal(results, ['call_1', 'call_0'], 'each result is recorded as it finishes');
});

s('maxParallelTools bounds the calls running at once (1 runs them one at a time); every call still runs', async (ctx) => {
  for (const limit of [2, 1]) {
    let running = 0;
    let most = 0;
    const ran: number[] = [];
    const tools = {
      work: defineTool({
        description: 'takes a while',
        inputSchema: z.object({ n: z.number() }),
        execute: async ({ n }) => {
          most = Math.max(most, ++running);
          await new Promise((r) => setTimeout(r, 30));
          running--;
          ran.push(n);
          return n;
        },
      }),
    };
    const e = await engine(ctx, tools, { maxParallelTools: limit });
    ctx.server.script(calls(['work', 'work', 'work', 'work', 'work']), { kind: 'text', text: 'ok' });
    await e.admit(`ses_lim_${limit}`, { prompt: 'five' });
    await e.awaitIdle(`ses_lim_${limit}`);
    assert.is(most, limit, `at most ${limit} at once`);
    assert.equal([...ran].sort(), [0, 1, 2, 3, 4]);
    assert.equal(
      toolResults(ctx.server, ctx.server.requests.length - 1).map(([id]) => id),
      ['call_0', 'call_1', 'call_2', 'call_3', 'call_4'],
    );
  }
  assert.throws(() => openaiRunner({ model: 'm', baseURL: ctx.server.url, maxParallelTools: 0 }), /Invalid maxParallelTools 0: use a whole number/);
});

s('a cancel aborts every running call of the batch, and the calls still waiting for a slot never start', async (ctx) => {
  const started: number[] = [];
  const aborted: number[] = [];
  const tools = {
    hang: defineTool({
      description: 'runs until aborted',
      inputSchema: z.object({ n: z.number() }),
      execute: ({ n }, tc) =>
        new Promise((_, reject) => {
          started.push(n);
          tc.signal.addEventListener('abort', () => {
            aborted.push(n);
            reject(tc.signal.reason);
          });
        }),
    }),
  };
  const e = await engine(ctx, tools, { maxParallelTools: 3 });
  ctx.server.script(calls(['hang', 'hang', 'hang', 'hang']));
  await e.admit('ses_cancel', { prompt: 'hang four' });
  await waitFor(() => started.length === 3, { timeoutMs: 5_000, what: 'three calls running' });
  await e.cancel('ses_cancel', 'stop');
  await e.awaitIdle('ses_cancel');
  assert.equal([...aborted].sort(), [0, 1, 2]);
  assert.equal([...started].sort(), [0, 1, 2], 'the fourth never started');
  assert.is((await e.status('ses_cancel')).outcome, 'cancelled');
});

s('a call waiting for approval waits while the others of its batch run; approved, it runs and the model goes on', async (ctx) => {
  const ran: string[] = [];
  const tools = {
    gated: defineTool({
      description: 'needs a person',
      inputSchema: z.object({ n: z.number() }),
      needsApproval: true,
      execute: async () => {
        ran.push('gated');
        return 'gated ran';
      },
    }),
    free: defineTool({
      description: 'runs at once',
      inputSchema: z.object({ n: z.number() }),
      execute: async ({ n }) => {
        ran.push(`free ${n}`);
        return `free ${n} ran`;
      },
    }),
  };
  const e = await engine(ctx, tools);
  ctx.server.script(calls(['free', 'gated', 'free']), { kind: 'text', text: 'All three.' });
  await e.admit('ses_gate', { prompt: 'three' });
  await waitFor(async () => (await e.status('ses_gate')).outcome === 'waiting', { timeoutMs: 5_000, what: 'the turn waiting' });
  assert.equal([...ran].sort(), ['free 0', 'free 2']);
  await e.approve('ses_gate', 'call_1');
  await e.awaitIdle('ses_gate');
  assert.equal(ran.at(-1), 'gated');
  assert.equal(
    toolResults(ctx.server, 1).map(([id]) => id),
    ['call_0', 'call_1', 'call_2'],
  );
});

s.run();
