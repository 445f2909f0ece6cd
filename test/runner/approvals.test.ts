/**
 * A person approves a tool call while the turn waits holding nothing: the model runner against the
 * local OpenAI-compatible server (real HTTP, the AI SDK), on the embedded engine. A tool with
 * `needsApproval` is recorded and not run; the turn settles waiting (no owner, no lease); approved,
 * the resumed turn runs it exactly once and the model goes on with its result; denied, it never
 * runs and the model is told why; several approvals in one step wait together.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { openEngine, type Engine } from '../../src/engine.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { openaiRunner } from '../../src/runner/model/openai.ts';
import { defineTool, type ToolRegistry } from '../../src/runner/model/tools.ts';
import { startFakeOpenAI, messageText, type FakeOpenAI } from '../../src/testing/fake-openai.ts';
import { CommandRefusedError } from '../../src/errors.ts';
import { tempDir } from '../support/tmp.ts';
import { setup } from '../projector/support.ts';
import type { AssistantData, ToolData } from '../../src/projector/message-rows.ts';

const KEY = 'sk-test-key';
type Ctx = { server: FakeOpenAI; tmp: ReturnType<typeof tempDir>; engines: Engine[] };
const s = suite<Ctx>('approvals');
s.before((ctx) => {
  ctx.tmp = tempDir('sessiond-approvals-');
  ctx.engines = [];
});
s.before.each(async (ctx) => {
  ctx.server = await startFakeOpenAI({ apiKey: KEY });
});
s.after.each(async (ctx) => {
  for (const e of ctx.engines.splice(0)) await e.close();
  await ctx.server.close();
  // (a failed assertion in a hook hides the test's own failure: say it instead)
  if (ctx.server.pending !== 0) console.error(`${ctx.server.pending} scripted responses unused`);
});
s.after((ctx) => ctx.tmp.remove());

let n = 0;
async function engine(ctx: Ctx, tools: ToolRegistry): Promise<Engine> {
  const e = await openEngine({
    file: ctx.tmp.file(`approvals-${++n}.db`),
    runner: openaiRunner({ model: 'fake-model', baseURL: ctx.server.url, apiKey: KEY, tools, retry: { baseDelayMs: 10, maxDelayMs: 50 } }),
  });
  ctx.engines.push(e);
  return e;
}

/** A mail tool that needs approval, and a lookup that does not; `sent` records each mail sent, with its idempotency key. */
function mailTools(sent: [string, string | undefined][]) {
  return {
    send_mail: defineTool({
      description: 'Send an email',
      inputSchema: z.object({ to: z.string() }),
      durable: true,
      needsApproval: true,
      execute: async ({ to }, tc) => {
        sent.push([to, tc.idempotencyKey]);
        return `sent to ${to}`;
      },
    }),
    lookup: defineTool({ description: 'Look up an address', inputSchema: z.object({ name: z.string() }), execute: async ({ name }) => `${name}@example.com` }),
    delete_file: defineTool({
      description: 'Delete a file',
      inputSchema: z.object({ path: z.string() }),
      // only outside /tmp
      needsApproval: ({ path }) => !path.startsWith('/tmp/'),
      execute: async ({ path }) => `deleted ${path}`,
    }),
  };
}

/** The tool calls of a session's assistant messages, as the projector makes them from its log. */
function projectedCalls(events: readonly SessionEvent[]): ToolData[] {
  const { db, projector } = setup();
  projector.apply(events);
  const rows = db.prepare("SELECT data FROM session_message WHERE type = 'assistant' ORDER BY seq").all() as { data: string }[];
  db.close();
  return rows.flatMap((r) => (JSON.parse(r.data) as AssistantData).tools);
}

const chats = (server: FakeOpenAI) => server.requests.filter((r) => r.path.endsWith('/chat/completions')).map((r) => r.chat!);
const types = (events: readonly SessionEvent[]) => events.map((e) => e.type);

async function waitingTurn(e: Engine, sessionId: string, prompt: string) {
  await e.admit(sessionId, { prompt });
  await e.awaitIdle(sessionId);
  return e.status(sessionId);
}

s('an approved call waits holding nothing, then runs exactly once in the resumed turn; the model goes on with its result', async (ctx) => {
  const sent: [string, string | undefined][] = [];
  const e = await engine(ctx, mailTools(sent));
  ctx.server.script(
    {
      kind: 'toolCalls',
      calls: [
        { id: 'call_l', name: 'lookup', arguments: { name: 'bob' } },
        { id: 'call_m', name: 'send_mail', arguments: { to: 'bob@example.com' } },
      ],
    },
    { kind: 'text', text: 'Mail sent to Bob.' },
  );
  const waiting = await waitingTurn(e, 'ses_ok', 'Mail Bob');
  assert.is(waiting.state, 'settled');
  assert.is(waiting.outcome, 'waiting');
  assert.is(waiting.owner, null, 'no worker holds the session');
  assert.is(waiting.leaseLive, false);
  assert.equal(
    waiting.waits.map((w) => [w.kind, w.name, w.tool, w.input, w.outcome]),
    [['approval', 'call_m', 'send_mail', { to: 'bob@example.com' }, null]],
    'status names the call, its tool and input',
  );
  assert.equal(sent, [], 'the call did not run');
  assert.is(chats(ctx.server).length, 1, 'the model is not asked again while the turn waits');

  const approved = await e.approve('ses_ok', 'call_m', { reason: 'looks right' });
  assert.equal([approved.resolved, approved.outcome, approved.resumeInputId !== undefined], [true, 'approved', true]);
  await e.awaitIdle('ses_ok');
  const done = await e.status('ses_ok');
  assert.is(done.outcome, 'succeeded');
  assert.equal(done.waits, [], 'the turn is over: its waits are gone');
  assert.is(sent.length, 1, 'ran once');
  assert.match(sent[0]![1]!, /^ses_ok:exe_.*:call_m$/, 'with the idempotency key of its call');
  const again = chats(ctx.server)[1]!.messages;
  assert.equal(
    again.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, messageText(m)]),
    [
      ['call_l', '"bob@example.com"'],
      ['call_m', '"sent to bob@example.com"'],
    ],
  );
  assert.ok(!again.some((m) => m.role === 'user' && messageText(m).startsWith('Resume')), "the engine's resume input is not said to the model");
  // approving again is idempotent; a different decision is refused
  assert.is((await e.approve('ses_ok', 'call_m')).resolved, false, 'after its turn too');
  const log = await e.log.readSession('ses_ok');
  assert.equal(
    projectedCalls(log).map((c) => [c.callId, c.state, c.decision?.outcome, c.runBy !== undefined]),
    [
      ['call_l', 'completed', undefined, false],
      ['call_m', 'completed', 'approved', true],
    ],
    'the projection: the approved call ran in the resumed execution',
  );
  assert.is(types(log).filter((t) => t === 'tool.started').length, 1);
  assert.is(types(log).filter((t) => t === 'wait.resolved').length, 1);
});

s('never runs a tool a person denied: the model gets a result that says it was denied and why', async (ctx) => {
  const sent: [string, string | undefined][] = [];
  const e = await engine(ctx, mailTools(sent));
  ctx.server.script(
    { kind: 'toolCalls', calls: [{ id: 'call_m', name: 'send_mail', arguments: { to: 'all@example.com' } }] },
    { kind: 'text', text: 'Understood.' },
  );
  await waitingTurn(e, 'ses_no', 'Mail everyone');
  const denied = await e.deny('ses_no', 'call_m', { reason: 'not to everyone' });
  assert.is(denied.outcome, 'denied');
  await e.awaitIdle('ses_no');
  assert.equal(sent, []);
  assert.is((await e.status('ses_no')).outcome, 'succeeded');
  const result = chats(ctx.server)[1]!.messages.find((m) => m.role === 'tool')!;
  assert.match(messageText(result), /denied: a person did not approve this call, and it did not run: not to everyone/);
  try {
    await e.approve('ses_no', 'call_m');
    assert.unreachable('a second, different decision is refused');
  } catch (err) {
    assert.instance(err, CommandRefusedError);
    assert.is((err as CommandRefusedError).reason, 'already_resolved', 'known after its turn is over');
    assert.match((err as Error).message, 'denied at');
  }
  const call = projectedCalls(await e.log.readSession('ses_no'))[0]!;
  assert.equal([call.state, call.decision?.outcome, call.decision?.reason], ['denied', 'denied', 'not to everyone'], 'the projection shows the decision');
});

s(
  'several approvals in one step wait together; a decision sent twice is idempotent, a different one refused; needsApproval as a function of the input',
  async (ctx) => {
    const sent: [string, string | undefined][] = [];
    const e = await engine(ctx, mailTools(sent));
    ctx.server.script(
      {
        kind: 'toolCalls',
        calls: [
          { id: 'call_a', name: 'send_mail', arguments: { to: 'a@example.com' } },
          { id: 'call_b', name: 'delete_file', arguments: { path: '/home/b.txt' } },
          { id: 'call_c', name: 'delete_file', arguments: { path: '/tmp/c.txt' } },
        ],
      },
      { kind: 'text', text: 'Done.' },
    );
    const waiting = await waitingTurn(e, 'ses_two', 'Mail a, delete b and c');
    assert.equal(
      waiting.waits.map((w) => w.name),
      ['call_a', 'call_b'],
      'a file under /tmp needs no approval',
    );
    const first = await e.approve('ses_two', 'call_a');
    assert.is(first.resumeInputId, undefined, 'the turn waits for the other decision');
    assert.is((await e.approve('ses_two', 'call_a')).resolved, false, 'the same decision again changes nothing');
    try {
      await e.deny('ses_two', 'call_a');
      assert.unreachable();
    } catch (err) {
      assert.is((err as CommandRefusedError).reason, 'already_resolved');
      assert.match((err as Error).message, 'approved at');
    }
    assert.is((await e.status('ses_two')).outcome, 'waiting');
    assert.is((await e.deny('ses_two', 'call_b')).resumeInputId !== undefined, true);
    await e.awaitIdle('ses_two');
    assert.equal(
      sent.map(([to]) => to),
      ['a@example.com'],
    );
    const results = chats(ctx.server)[1]!
      .messages.filter((m) => m.role === 'tool')
      .map((m) => [m.tool_call_id, messageText(m).slice(0, 20)]);
    assert.equal(results, [
      ['call_a', '"sent to a@example.c'],
      ['call_b', 'denied: a person did'],
      ['call_c', '"deleted /tmp/c.txt"'],
    ]);
  },
);

s('cancelling a waiting session ends the wait: the call never runs, and the next prompt runs a new turn', async (ctx) => {
  const sent: [string, string | undefined][] = [];
  const e = await engine(ctx, mailTools(sent));
  ctx.server.script(
    { kind: 'toolCalls', calls: [{ id: 'call_m', name: 'send_mail', arguments: { to: 'x@example.com' } }] },
    { kind: 'text', text: 'Hello again.' },
  );
  await waitingTurn(e, 'ses_cancel', 'Mail x');
  const cancelled = await e.cancel('ses_cancel', 'changed my mind');
  assert.is(cancelled.cancelled, true);
  const after = await e.status('ses_cancel');
  assert.equal(after.waits, []);
  await e.admit('ses_cancel', { prompt: 'hi' });
  await e.awaitIdle('ses_cancel');
  assert.is((await e.status('ses_cancel')).outcome, 'succeeded');
  assert.equal(sent, []);
  const tool = chats(ctx.server)[1]!.messages.find((m) => m.role === 'tool')!;
  assert.match(messageText(tool), /cancelled: the call waited for approval and the turn was cancelled/);
});

s.run();
