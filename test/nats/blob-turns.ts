/**
 * The blob checks a real `sessiond start --nats` worker must pass, on one server or a cluster: a
 * 6 MB image prompt (its bytes put in the Object Store as the worker user, the prompt a small
 * reference sent through the NATS client) reaches the model whole, and a 3 MB tool result reaches
 * the next model call whole; the events hold only references.
 */
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { SessiondClient } from '../../src/client/client.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { ObjectBlobStore } from '../../src/nats/object-blob-store.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { startFakeOpenAI, messageText, type ChatCompletionRequest, type FakeOpenAI } from '../../src/testing/fake-openai.ts';
import { CLIENT, WORKER } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import type { LongRunning } from '../support/cli.ts';
import { pngBytes } from '../support/png.ts';
import { LOG_PAGE } from './fixtures/blob-tools.ts';

const TOOLS = fileURLToPath(new URL('./fixtures/blob-tools.ts', import.meta.url));
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const chats = (llm: FakeOpenAI): ChatCompletionRequest[] => llm.requests.filter((r) => r.path.endsWith('/chat/completions')).map((r) => r.chat!);

/** Starts the worker with these flags (the openai runner at the fake model server, the blob tool). */
export type StartWorker = (flags: string[]) => Promise<LongRunning>;

export async function checkBlobTurns(servers: string[], startWorker: StartWorker, label: string): Promise<void> {
  const llm = await startFakeOpenAI();
  const nc = await connectNats({ servers, ...WORKER });
  const client = await SessiondClient.connect({ connection: { servers, ...CLIENT, reconnectWaitMs: 50 } });
  const reader = await JetStreamEventLog.open({ connection: { servers, ...WORKER } });
  try {
    const worker = await startWorker(['--runner', 'openai', '--model', 'fake-model', '--base-url', llm.url, '--tools', TOOLS]);
    assert.not.match(worker.output(), 'no blob store', 'the worker opened the blob bucket');
    const photo = pngBytes(6 * 1024 * 1024, 13);
    const ref = await (await ObjectBlobStore.open(nc)).put(photo, { mediaType: 'image/png' });
    llm.script(
      { kind: 'text', text: 'A pattern.' },
      { kind: 'toolCalls', calls: [{ id: 'call_r1', name: 'read_log', arguments: {} }] },
      { kind: 'text', text: '30000 lines.' },
    );
    const photoSession = `ses_photo_${label}_${process.pid}`;
    await client.admit(photoSession, {
      prompt: [
        { type: 'text', text: 'describe this' },
        { type: 'image', blob: ref },
      ],
    });
    await waitFor(async () => (await client.status(photoSession)).outcome !== null, { what: 'the image turn to settle', timeoutMs: 60_000, intervalMs: 100 });
    assert.is((await client.status(photoSession)).outcome, 'succeeded', worker.output());
    const image = (chats(llm)[0]!.messages.find((m) => m.role === 'user')!.content as { type: string; image_url?: { url: string } }[])[1]!;
    assert.is(image.type, 'image_url');
    const sent = Buffer.from(image.image_url!.url.slice('data:image/png;base64,'.length), 'base64');
    assert.is(sent.length, photo.length, 'the whole photo');
    assert.is(sha(sent), sha(photo), 'byte for byte');

    const toolSession = `ses_tool_${label}_${process.pid}`;
    await client.admit(toolSession, { prompt: 'read the log' });
    await waitFor(async () => (await client.status(toolSession)).outcome !== null, { what: 'the tool turn to settle', timeoutMs: 60_000, intervalMs: 100 });
    assert.is((await client.status(toolSession)).outcome, 'succeeded', worker.output());
    const whole = JSON.stringify(LOG_PAGE);
    assert.ok(whole.length > 3_000_000);
    const result = chats(llm)[2]!.messages.find((m) => m.role === 'tool')!;
    assert.is(sha(Buffer.from(messageText(result))), sha(Buffer.from(whole)), 'the whole tool result reached the next model call');
    const events = await reader.readSession(toolSession);
    const succeeded = events.find((x): x is SessionEvent<'tool.succeeded'> => x.type === 'tool.succeeded')!;
    assert.is(succeeded.payload.output, undefined, 'the event holds no copy');
    assert.equal(succeeded.payload.outputBlob, { sha256: sha(Buffer.from(whole)), size: whole.length, mediaType: 'application/json' });
    assert.ok(await (await ObjectBlobStore.open(nc)).has(succeeded.payload.outputBlob!.sha256), 'stored in the Object Store');
  } finally {
    await reader.close();
    await client.close();
    await nc.close();
    await llm.close();
  }
}
