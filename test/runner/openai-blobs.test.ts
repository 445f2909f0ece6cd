/**
 * Blob parts reach the model whole: a 6 MB image admitted on the embedded log is stored beside it
 * (the event holds its reference) and the OpenAI-compatible runner sends its bytes, on every turn
 * that sends the conversation, against the local server (src/testing/fake-openai.ts).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { openEngine, type Engine } from '../../src/engine.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { openaiRunner } from '../../src/runner/model/openai.ts';
import { startFakeOpenAI, messageText, type FakeOpenAI, type ChatCompletionRequest } from '../../src/testing/fake-openai.ts';
import { defineTool } from '../../src/runner/model/tools.ts';
import { z } from 'zod';
import { tempDir } from '../support/tmp.ts';
import { pngBytes } from '../support/png.ts';

const KEY = 'sk-test-key';
const s = suite<{ server: FakeOpenAI; tmp: ReturnType<typeof tempDir>; engine: Engine }>('openai runner, blob parts');
s.before.each(async (ctx) => {
  ctx.server = await startFakeOpenAI({ apiKey: KEY });
  ctx.tmp = tempDir('sessiond-openai-blobs-');
  ctx.engine = await openEngine({
    file: ctx.tmp.file('s.db'),
    runner: openaiRunner({ model: 'fake-model', baseURL: ctx.server.url, apiKey: KEY, retry: { baseDelayMs: 10, maxDelayMs: 200 }, random: () => 1 }),
  });
});
s.after.each(async (ctx) => {
  await ctx.engine.close();
  await ctx.server.close();
  ctx.tmp.remove();
  assert.is(ctx.server.pending, 0, 'every scripted response was used');
});

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const chats = (server: FakeOpenAI): ChatCompletionRequest[] => server.requests.filter((r) => r.path.endsWith('/chat/completions')).map((r) => r.chat!);
type Content = { type: string; text?: string; image_url?: { url: string }; file?: { filename?: string; file_data?: string } }[];
const firstUser = (req: ChatCompletionRequest) => req.messages.find((m) => m.role === 'user')!.content as Content;
const dataUrlBytes = (url: string, mediaType: string) => {
  const prefix = `data:${mediaType};base64,`;
  assert.ok(url.startsWith(prefix), `a data URL of ${mediaType}: ${url.slice(0, 40)}`);
  return Buffer.from(url.slice(prefix.length), 'base64');
};

s('a 6 MB image reaches the model byte for byte, on this turn and the next; the event holds only its reference', async (ctx) => {
  const e = ctx.engine;
  const photo = pngBytes(6 * 1024 * 1024, 7);
  ctx.server.script({ kind: 'text', text: 'A pattern.' }, { kind: 'text', text: 'Yes.' });
  await e.admit('ses_photo', {
    prompt: [
      { type: 'text', text: 'describe this' },
      { type: 'image', data: photo.toString('base64'), mediaType: 'image/png' },
    ],
  });
  await e.awaitIdle('ses_photo');
  await e.admit('ses_photo', { prompt: 'Sure?' });
  await e.awaitIdle('ses_photo');
  const requests = chats(ctx.server);
  assert.is(requests.length, 2);
  for (const [i, req] of requests.entries()) {
    const content = firstUser(req);
    assert.equal(
      content.map((c) => c.type),
      ['text', 'image_url'],
      `request ${i}`,
    );
    const sent = dataUrlBytes(content[1]!.image_url!.url, 'image/png');
    assert.is(sent.length, photo.length, `request ${i}: the whole image`);
    assert.is(sha(sent), sha(photo), `request ${i}: the same bytes`);
  }
  const admitted = (await e.log.readSession('ses_photo')).find((x): x is SessionEvent<'input.admitted'> => x.type === 'input.admitted')!;
  assert.equal((admitted.payload.prompt as unknown[])[1], { type: 'image', blob: { sha256: sha(photo), size: photo.length, mediaType: 'image/png' } });
});

s('a 6 MB image counts as an image against the context window, not as its base64 text: no compaction', async (ctx) => {
  const e = await openEngine({
    file: ctx.tmp.file('window.db'),
    runner: openaiRunner({ model: 'fake-model', baseURL: ctx.server.url, apiKey: KEY, contextWindow: 8_000 }),
  });
  try {
    ctx.server.script({ kind: 'text', text: 'A pattern.' });
    const photo = pngBytes(6 * 1024 * 1024, 11);
    await e.admit('ses_window', {
      prompt: [
        { type: 'text', text: 'describe' },
        { type: 'image', data: photo.toString('base64'), mediaType: 'image/png' },
      ],
    });
    await e.awaitIdle('ses_window');
    assert.is((await e.status('ses_window')).outcome, 'succeeded');
    assert.is(chats(ctx.server).length, 1, 'one request, no summary asked for');
  } finally {
    await e.close();
  }
});

s('a file part by reference to a blob a client stored reaches the model as its bytes, with its name', async (ctx) => {
  const e = ctx.engine;
  const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n'), pngBytes(3_000_000, 9).subarray(8)]);
  const ref = await e.blobs!.put(pdf, { mediaType: 'application/pdf' });
  ctx.server.script({ kind: 'text', text: 'An invoice.' });
  await e.admit('ses_file', {
    prompt: [
      { type: 'text', text: 'read it' },
      { type: 'file', blob: ref, filename: 'invoice.pdf' },
    ],
  });
  await e.awaitIdle('ses_file');
  const content = firstUser(chats(ctx.server)[0]!);
  assert.is(content[1]!.type, 'file');
  assert.is(content[1]!.file!.filename, 'invoice.pdf');
  assert.is(sha(dataUrlBytes(content[1]!.file!.file_data!, 'application/pdf')), ref.sha256);
});

s('a 3 MB tool result is stored beside the log and the model gets the whole result, on the next step and the next turn', async (ctx) => {
  const page = Array.from({ length: 30_000 }, (_, i) => `line ${i}: ${'x'.repeat(90)}`);
  const e = await openEngine({
    file: ctx.tmp.file('tools.db'),
    runner: openaiRunner({
      model: 'fake-model',
      baseURL: ctx.server.url,
      apiKey: KEY,
      tools: { read_log: defineTool({ description: 'Reads the log', inputSchema: z.object({}), execute: async () => ({ lines: page }) }) },
    }),
  });
  try {
    ctx.server.script(
      { kind: 'toolCalls', calls: [{ id: 'call_r1', name: 'read_log', arguments: {} }] },
      { kind: 'text', text: '30000 lines.' },
      { kind: 'text', text: 'Still 30000.' },
    );
    await e.admit('ses_tool', { prompt: 'read the log' });
    await e.awaitIdle('ses_tool');
    await e.admit('ses_tool', { prompt: 'how many?' });
    await e.awaitIdle('ses_tool');
    const whole = JSON.stringify({ lines: page });
    assert.ok(whole.length > 3_000_000);
    for (const i of [1, 2]) {
      const result = chats(ctx.server)[i]!.messages.find((m) => m.role === 'tool')!;
      assert.is(result.tool_call_id, 'call_r1');
      assert.is(sha(Buffer.from(messageText(result))), sha(Buffer.from(whole)), `request ${i}: the whole result`);
    }
    const events = await e.log.readSession('ses_tool');
    const succeeded = events.find((x): x is SessionEvent<'tool.succeeded'> => x.type === 'tool.succeeded')!;
    assert.is(succeeded.payload.output, undefined, 'the event holds no copy');
    assert.equal(succeeded.payload.outputBlob, { sha256: sha(Buffer.from(whole)), size: whole.length, mediaType: 'application/json' });
    assert.ok(events.every((x) => x.type !== 'execution.settled' || (x as SessionEvent<'execution.settled'>).payload.outcome === 'succeeded'));
  } finally {
    await e.close();
  }
});

s.run();
