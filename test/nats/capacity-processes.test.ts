// Real processes sharing one NATS server (KV bucket SESSIOND_CAPACITY, as the worker user): the
// limit holds across processes, and a process SIGKILLed while it holds a slot frees it within its lease.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startNatsServer, type NatsServer } from '../../src/testing/nats-server.ts';
import { modelServer, spawnGate } from '../capacity/process-support.ts';

let server: NatsServer | undefined;

test('capacity processes (nats) - two workers, limit 2, 8 calls each: the model server never sees more than 2 at once', async () => {
  server ??= await startNatsServer();
  const model = await modelServer(15);
  try {
    const workers = ['n1', 'n2'].map((ownerId) =>
      spawnGate({ nats: server!.url, ownerId, limit: 2, leaseMs: 5_000, mode: 'calls', calls: 8, modelUrl: model.url }),
    );
    for (const w of workers) await w.waitForLine((l) => l === 'DONE 8', 60_000);
    assert.is(model.total, 16);
    assert.is(model.max, 2);
  } finally {
    await model.close();
  }
});

test('capacity processes (nats) - a worker SIGKILLed holding the only slot frees it within its lease', async () => {
  server ??= await startNatsServer();
  const model = await modelServer(0);
  try {
    const LEASE = 1_500;
    const holder = spawnGate({ nats: server.url, ownerId: 'holder', limit: 1, leaseMs: LEASE, mode: 'hold' });
    await holder.waitForLine((l) => l === 'HELD');
    holder.child.kill('SIGKILL');
    await holder.exited;
    const killedAt = Date.now();
    const next = spawnGate({ nats: server.url, ownerId: 'next', limit: 1, leaseMs: LEASE, mode: 'calls', calls: 1, modelUrl: model.url });
    await next.waitForLine((l) => l === 'DONE 1', 30_000);
    const took = Date.now() - killedAt;
    assert.ok(took < LEASE + 5_000, `the slot freed within the lease (${took} ms after the kill)`);
  } finally {
    await model.close();
  }
});

test.after(async () => {
  await server?.dispose();
});
test.run();
