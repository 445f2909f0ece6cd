/**
 * The deletions follower (a worker's, and the inspector's on NATS) closes whenever it is closed. It
 * resolves `caughtUp` before it starts consuming (nothing stored to catch up on), so a worker may
 * close it while its consumer is still being made: that close used to wait forever (the consumer,
 * made after the close, was never ended), holding the worker's stop.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { NatsConnection } from '@nats-io/transport-node';
import { followDeletions } from '../../src/nats/deletion-stream.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { startNatsServer, WORKER, type NatsServer } from '../../src/testing/nats-server.ts';

let server: NatsServer;
let nc: NatsConnection;

test.before(async () => {
  server = await startNatsServer();
  nc = await connectNats({ servers: server.url, ...WORKER, reconnectWaitMs: 100 });
});

test.after(async () => {
  await nc?.close();
  await server?.dispose();
});

/** Whether `p` settles within `ms` (a close that hangs fails the test instead of holding the file). */
const within = (p: Promise<unknown>, ms: number) => Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())]);

test('deletion follower - closed as soon as it has caught up (its consumer still being made): the close finishes', async () => {
  for (let i = 0; i < 5; i++) {
    const follower = followDeletions(nc, { onDeletion: () => {} });
    await follower.caughtUp;
    assert.ok(await within(follower.close(), 10_000), `close ${i + 1} finished`);
  }
});

test('deletion follower - closed at once, before it asked the stream anything: the close finishes', async () => {
  const follower = followDeletions(nc, { onDeletion: () => {} });
  assert.ok(await within(follower.close(), 10_000), 'the close finished');
});

test.run();
