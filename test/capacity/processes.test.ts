// Real processes sharing one SQLite file: the limit holds across processes, and a process
// SIGKILLed while it holds a slot frees it within its lease.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tempDir } from '../support/tmp.ts';
import { modelServer, spawnGate } from './process-support.ts';

test('capacity processes - two workers on one SQLite file, limit 2, 8 calls each: the model server never sees more than 2 at once', async () => {
  const tmp = tempDir();
  const model = await modelServer(15);
  try {
    const file = tmp.file('fleet.db');
    const workers = ['w1', 'w2'].map((ownerId) => spawnGate({ file, ownerId, limit: 2, leaseMs: 5_000, mode: 'calls', calls: 8, modelUrl: model.url }));
    for (const w of workers) await w.waitForLine((l) => l === 'DONE 8', 60_000);
    assert.is(model.total, 16, 'every call reached the model');
    assert.is(model.max, 2, 'never more than 2 in flight (and the limit was reached)');
    assert.equal(new Set(model.callers), new Set(['w1', 'w2']));
  } finally {
    await model.close();
    tmp.remove();
  }
});

test('capacity processes - a worker SIGKILLed holding the only slot frees it within its lease', async () => {
  const tmp = tempDir();
  const model = await modelServer(0);
  try {
    const file = tmp.file('fleet.db');
    const LEASE = 1_500;
    const holder = spawnGate({ file, ownerId: 'holder', limit: 1, leaseMs: LEASE, mode: 'hold' });
    await holder.waitForLine((l) => l === 'HELD');
    holder.child.kill('SIGKILL');
    await holder.exited;
    const killedAt = Date.now();
    const next = spawnGate({ file, ownerId: 'next', limit: 1, leaseMs: LEASE, mode: 'calls', calls: 1, modelUrl: model.url });
    await next.waitForLine((l) => l === 'DONE 1', 30_000);
    const took = Date.now() - killedAt;
    // the new process's own start (node + tsx) counts in `took`, so allow for it beside the lease
    assert.ok(took < LEASE + 5_000, `the slot freed within the lease (${took} ms after the kill)`);
    assert.is(model.total, 1);
  } finally {
    await model.close();
    tmp.remove();
  }
});

test.run();
