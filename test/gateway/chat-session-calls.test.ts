/**
 * The chat route while a turn waits on a session tool call: the call shows as a tool call in
 * progress, the child's live text comes as the call's preliminary output, and the message goes on
 * (through the sweep's delivery and the resumed turn) to the child's answer as the call's output
 * and the parent's answer, read through the AI SDK's own transport and `readUIMessageStream`.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from 'ai';
import { startSessiond, type Sessiond } from '../../src/host.ts';
import type { RunContext } from '../../src/runner/types.ts';
import { startGateway, type Gateway } from '../../src/gateway/server.ts';
import { engineLive } from '../../src/gateway/live.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../../src/testing/wait.ts';

const tmp = tempDir();
let sessiond: Sessiond;
let gateway: Gateway;
let go: (() => void) | undefined;

/** ses_kid streams "digging ", holds until the test lets it go, then "found it"; the parent calls it as a tool and answers with its answer. */
async function runner(ctx: RunContext): Promise<void> {
  if (ctx.sessionId === 'ses_kid') {
    const { messageId } = await ctx.startStep();
    const part = `prt_${messageId.slice(4)}`;
    ctx.delta(messageId, part, 'digging ');
    await new Promise<void>((r) => (go = r));
    ctx.delta(messageId, part, 'found it');
    await ctx.text(messageId, 'digging found it', part);
    await ctx.endStep(messageId);
    return;
  }
  const call = { sessionId: 'ses_kid', prompt: 'dig' };
  const asked = ctx.waits.find((w) => w.kind === 'session');
  if (asked) {
    const r = await ctx.callSession(asked.name, {
      ...call,
      asToolCall: { messageId: asked.messageId!, callId: asked.callId!, tool: 'kid', input: { q: 'dig' } },
    });
    const { messageId } = await ctx.startStep();
    await ctx.text(messageId, `The kid says: ${r.text}`);
    await ctx.endStep(messageId);
    return;
  }
  const { messageId } = await ctx.startStep();
  try {
    await ctx.callSession('kid', { ...call, asToolCall: { messageId, callId: 'call_kid', tool: 'kid', input: { q: 'dig' } } });
  } finally {
    await ctx.endStep(messageId, 'tool-calls');
  }
}

test.before(async () => {
  sessiond = await startSessiond({ db: tmp.file('chat-calls.db'), runner, sweepMs: 100 });
  gateway = await startGateway({ sessions: sessiond, live: engineLive(sessiond), port: 0, heartbeatMs: 50 });
});
test.after(async () => {
  await gateway?.close();
  await sessiond?.close();
  tmp.remove();
});

test("chat - a session tool call streams as a tool call in progress, the child's text as preliminary output, then its answer", async () => {
  const stream = await new DefaultChatTransport<UIMessage>({ api: `${gateway.url}v1/chat` }).sendMessages({
    chatId: 'ses_chat_lead',
    messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'ask the kid' }] }],
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined,
  });
  const chunks: UIMessageChunk[] = [];
  const [mine, sdk] = stream.tee();
  const collect = (async () => {
    for await (const c of mine as unknown as AsyncIterable<UIMessageChunk>) chunks.push(c);
  })();
  const messages = (async () => {
    let message: UIMessage | undefined;
    for await (const m of readUIMessageStream({ stream: sdk, terminateOnError: true })) message = m;
    return message;
  })();
  await waitFor(() => chunks.some((c) => c.type === 'tool-input-available' && c.toolCallId === 'call_kid') && go !== undefined, {
    what: 'the call shown and the kid holding',
  });
  await waitFor(async () => (await sessiond.status('ses_chat_lead')).outcome === 'waiting', { what: 'the parent waiting' });
  go!();
  const message = await messages;
  await collect;

  const preliminary = chunks.filter((c) => c.type === 'tool-output-available' && (c as { preliminary?: boolean }).preliminary);
  assert.ok(preliminary.length > 0, JSON.stringify(chunks.map((c) => c.type)));
  assert.equal((preliminary.at(-1) as { output: unknown }).output, { session: 'ses_kid', text: 'digging found it' }, "the child's text so far");
  const final = chunks.filter((c) => c.type === 'tool-output-available' && !(c as { preliminary?: boolean }).preliminary);
  assert.equal(
    final.map((c) => (c as { output: unknown }).output),
    ['digging found it'],
    "the child's answer is the call's output",
  );
  assert.ok(chunks.indexOf(preliminary[0]!) < chunks.indexOf(final[0]!), 'progress before the answer');
  const tool = message!.parts.find((p) => p.type === 'tool-kid') as { state: string; output: unknown } | undefined;
  assert.equal([tool?.state, tool?.output], ['output-available', 'digging found it']);
  assert.match(
    message!.parts
      .filter((p) => p.type === 'text')
      .map((p) => (p as { text: string }).text)
      .join(''),
    'The kid says: digging found it',
  );
  assert.is(chunks.at(-1)!.type, 'finish');
});

test.run();
