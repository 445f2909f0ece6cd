/**
 * The JetStream log hands the messages it published itself to its reads and subscriptions from
 * memory (JetStreamLogBase.published/decode) instead of unpacking and checking them again: what
 * they get must equal what another handle decodes from the stream, event for event (the server's
 * stored time as committedAt included), and a stream recreated under the handle (its sequences
 * start again) must be read from the stream, not from memory.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats } from '../../src/nats/connection.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { STREAM_NAME } from '../../src/nats/subjects.ts';
import { durableEventTypes } from '../../src/events/catalog.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { startNatsServer, setupStreams, ADMIN, WORKER, type NatsServer } from '../../src/testing/nats-server.ts';
import { draft, ev } from '../../src/testing/fixtures.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { protoEvent } from '../support/arbitraries.ts';

let server: NatsServer;
const open = () => JetStreamEventLog.open({ connection: { servers: server.url, ...WORKER, reconnectWaitMs: 100 } });

async function recreateStream(): Promise<void> {
  const admin = await connectNats({ servers: server.url, ...ADMIN });
  await (await jetstreamManager(admin)).streams.delete(STREAM_NAME);
  await admin.close();
  await setupStreams(server.url);
}

/** Tool inputs that do not read back as they were handed in. */
const oddInputs = [{ missing: undefined, kept: 1 }, [1, undefined, 3], { minusZero: -0 }, { when: new Date(0) }, { lone: '\uD800 alone' }].map((input, i) =>
  ev('tool.called', { callId: `call_odd${i}`, input }),
);

test.before(async () => {
  server = await startNatsServer();
});
test.after(async () => {
  await server.dispose();
});

test('own messages - a subscriber and a read of the publishing handle get what another handle decodes', async () => {
  const a = await open();
  const got: SessionEvent[] = [];
  const sub = a.subscribe({
    after: 0,
    onBatch: (events) => {
      got.push(...events);
    },
  });
  const protos = [...durableEventTypes.map((type) => ev(type)), ...fc.sample(protoEvent, { numRuns: 120, seed: 11 }), ...oddInputs];
  let seq = 0;
  for (let i = 0; i < protos.length; i += 3) {
    const batch = protos.slice(i, i + 3).map((p) => draft(p));
    await a.append('ses_own', seq, batch);
    seq += batch.length;
  }
  await waitFor(() => got.length >= seq, { what: `${seq} events delivered` });
  await sub.close();
  const b = await open();
  const decoded = await b.readSession('ses_own');
  assert.is(decoded.length, seq);
  assert.equal(got, decoded, 'handed over from memory = decoded from the stream');
  assert.equal(await a.readSession('ses_own'), decoded, "the publishing handle's reads too");
  assert.ok(a.stats.fromOwn > 0, 'messages came from memory');
  assert.is(b.stats.fromOwn, 0);
  await a.close();
  await b.close();
  await recreateStream();
});

test('a tool call without input and a void result are stored, and read back by another handle (never quarantined)', async () => {
  const a = await open();
  const b = await open();
  const appended = await a.append('ses_void', 0, [
    draft(ev('tool.called', { callId: 'call_v', input: undefined })),
    draft(ev('tool.succeeded', { callId: 'call_v', output: undefined })),
  ]);
  const read = await b.readSession('ses_void');
  assert.equal(
    read.map((e) => e.type),
    ['tool.called', 'tool.succeeded'],
  );
  assert.is((read[0] as SessionEvent<'tool.called'>).payload.input, undefined);
  assert.is(b.stats.quarantined, 0);
  assert.is(appended.length, 2);
  await a.close();
  await b.close();
  await recreateStream();
});

test('own messages - a stream recreated under the handle is read from the stream', async () => {
  const a = await open();
  await a.append('ses_first', 0, [draft(ev('input.admitted', { inputId: 'inp_first', prompt: 'first' }))]);
  await recreateStream();
  // another writer's message now has the sequence a's first message had
  const b = await open();
  await b.append('ses_second', 0, [draft(ev('input.admitted', { inputId: 'inp_second', prompt: 'a longer prompt than the first one' }))]);
  const all = await a.readAll();
  assert.equal(
    all.map((e) => [e.sessionId, e.position]),
    [['ses_second', 1]],
  );
  assert.is(a.stats.fromOwn, 0);
  await a.close();
  await b.close();
  await recreateStream();
});

test.run();
