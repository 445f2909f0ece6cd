/**
 * The gateway's chat routes through the AI SDK's own `DefaultChatTransport` (what `useChat` uses; it
 * validates every chunk against the SDK's schema) and `readUIMessageStream`: a message is admitted
 * and its turn streams back as a UI message (deltas as they come, tool calls with their output, the
 * finish), a retried request runs once and replays, `reconnectToStream` is empty between turns and
 * replays a turn under way from its start (with heartbeats while it holds), and a bad request is a 400 saying why.
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
let release: (() => void) | undefined;

/** Streams its answer word by word, calls a tool, then answers again; a prompt "hold" waits for the test to release it. */
async function runner(ctx: RunContext): Promise<void> {
  const prompt = ctx.inputs.map((i) => i.prompt).join(' ');
  const { messageId } = await ctx.startStep();
  const partId = `prt_${messageId.slice(4)}`;
  for (const w of `You said: ${prompt}`.split(/(?<= )/)) ctx.delta(messageId, partId, w);
  if (prompt.includes('hold')) await new Promise<void>((r) => (release = r));
  await ctx.text(messageId, `You said: ${prompt}`, partId);
  await ctx.tool(messageId, { name: 'count', input: { text: prompt } }, async () => ({ words: prompt.split(' ').length }));
  await ctx.endStep(messageId);
}

test.before(async () => {
  sessiond = await startSessiond({ db: tmp.file('chat.db'), runner });
  gateway = await startGateway({ sessions: sessiond, live: engineLive(sessiond), port: 0, heartbeatMs: 50 });
});
test.after(async () => {
  await gateway?.close();
  await sessiond?.close();
  tmp.remove();
});

const transport = () => new DefaultChatTransport<UIMessage>({ api: `${gateway.url}v1/chat` });
const user = (id: string, text: string): UIMessage => ({ id, role: 'user', parts: [{ type: 'text', text }] });

async function read(stream: ReadableStream<UIMessageChunk>): Promise<{ message: UIMessage | undefined; chunks: UIMessageChunk[] }> {
  const chunks: UIMessageChunk[] = [];
  const [mine, sdk] = stream.tee();
  const collect = (async () => {
    for await (const c of mine as unknown as AsyncIterable<UIMessageChunk>) chunks.push(c);
  })();
  let message: UIMessage | undefined;
  for await (const m of readUIMessageStream({ stream: sdk, terminateOnError: true })) message = m;
  await collect;
  return { message, chunks };
}

const textOf = (m: UIMessage | undefined) =>
  (m?.parts ?? [])
    .filter((p) => p.type === 'text')
    .map((p) => (p as { text: string }).text)
    .join('|');

test('a message through DefaultChatTransport: the answer streams as text deltas, the tool call with its output, then finish', async () => {
  const stream = await transport().sendMessages({
    chatId: 'ses_chat_1',
    messages: [user('m1', 'hello chat world')],
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined,
  });
  const { message, chunks } = await read(stream);
  assert.is(textOf(message), 'You said: hello chat world');
  assert.ok(chunks.filter((c) => c.type === 'text-delta').length >= 4, 'word by word');
  const tool = message!.parts.find((p) => p.type === 'tool-count') as { state: string; input: unknown; output: unknown } | undefined;
  assert.ok(tool, JSON.stringify(message!.parts));
  assert.equal([tool!.state, tool!.input, tool!.output], ['output-available', { text: 'hello chat world' }, { words: 3 }]);
  assert.is(chunks.at(-1)!.type, 'finish');
  assert.is((await sessiond.status('ses_chat_1')).state, 'settled');

  // the same message again (a retried request): admitted once, its turn replayed from the log
  const again = await read(
    await transport().sendMessages({
      chatId: 'ses_chat_1',
      messages: [user('m1', 'hello chat world')],
      trigger: 'submit-message',
      messageId: undefined,
      abortSignal: undefined,
    }),
  );
  assert.is(textOf(again.message), 'You said: hello chat world');
  const admitted = (await sessiond.engine.log.readSession('ses_chat_1')).filter((e) => e.type === 'input.admitted');
  assert.is(admitted.length, 1, 'one admission');
  assert.is(await transport().reconnectToStream({ chatId: 'ses_chat_1' }), null, 'nothing under way: 204');
});

test('reconnectToStream during a turn replays it from its start, then live, to the end', async () => {
  release = undefined;
  const first = await transport().sendMessages({
    chatId: 'ses_chat_2',
    messages: [user('m2', 'hold this one')],
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined,
  });
  await waitFor(() => release !== undefined, { what: 'the turn to be holding' });
  // a stream that waits keeps its connection alive with heartbeats (comment lines the SDK skips)
  const raw = await fetch(`${gateway.url}v1/chat/ses_chat_2/stream`, { signal: AbortSignal.timeout(10_000) });
  const reader = raw.body!.getReader();
  let text = '';
  while (!text.includes(': heartbeat')) {
    const { value, done } = await reader.read();
    assert.not.ok(done, `the stream ended without a heartbeat: ${text}`);
    text += new TextDecoder().decode(value);
  }
  await reader.cancel();
  // the page reloads: a second reader asks for the stream under way
  const resumed = await transport().reconnectToStream({ chatId: 'ses_chat_2' });
  assert.ok(resumed, 'a turn is under way');
  release!();
  const [a, b] = await Promise.all([read(first), read(resumed!)]);
  assert.is(textOf(a.message), 'You said: hold this one');
  assert.is(textOf(b.message), 'You said: hold this one', 'the resumed stream has the whole text once');
  assert.is(b.chunks.at(-1)!.type, 'finish');
});

test('bad chat requests are 400 with the reason', async () => {
  const post = async (body: unknown) => {
    const res = await fetch(`${gateway.url}v1/chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as { error: { code: string; message: string } } };
  };
  const regenerate = await post({ id: 'ses_chat_1', messages: [user('m1', 'x')], trigger: 'regenerate-message' });
  assert.is(regenerate.status, 400);
  assert.match(regenerate.body.error.message, 'fork the session');
  const assistantLast = await post({ id: 'ses_chat_1', messages: [{ id: 'a1', role: 'assistant', parts: [{ type: 'text', text: 'x' }] }] });
  assert.match(assistantLast.body.error.message, "the user's new message");
  const badId = await post({ id: 'not ok', messages: [user('m9', 'x')] });
  assert.equal([badId.status, badId.body.error.code], [400, 'invalid_id']);
  const empty = await post({ id: 'ses_chat_3', messages: [{ id: 'm3', role: 'user', parts: [{ type: 'step-start' }] }] });
  assert.match(empty.body.error.message, 'no text or file part');
});

test.run();
