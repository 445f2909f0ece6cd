// The CapacityStore contract on JetStream KV (bucket SESSIOND_CAPACITY, as the worker user of the
// shipped nats.conf: one connection per store), and who may use the bucket.
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CAPACITY_BUCKET, jetstreamCapacityStore } from '../../src/capacity/kv-capacity-store.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { capacityStoreContract } from '../../src/testing/capacity-store-contract.ts';
import { ADMIN, CLIENT, setupStreams, startNatsServer, WORKER, type NatsServer } from '../../src/testing/nats-server.ts';
import type { NatsConnection } from '@nats-io/transport-node';

let server: NatsServer | undefined;

async function resetBucket(): Promise<void> {
  const admin = await connectNats({ servers: server!.url, ...ADMIN });
  await (await jetstreamManager(admin)).streams.delete(`KV_${CAPACITY_BUCKET}`).catch(() => undefined);
  await admin.close();
  await setupStreams(server!.url);
}

const contract = capacityStoreContract('jetstream kv, as the worker user', async () => {
  server ??= await startNatsServer();
  const conns: NatsConnection[] = [];
  return {
    open: async () => {
      const nc = await connectNats({ servers: server!.url, ...WORKER });
      conns.push(nc);
      return jetstreamCapacityStore(nc);
    },
    cleanup: async () => {
      for (const nc of conns) await nc.close();
      await resetBucket();
    },
  };
});
contract.run();

test('capacity kv - a deployment set up before the bucket existed: the worker is told to run sessiond setup', async () => {
  server ??= await startNatsServer();
  const admin = await connectNats({ servers: server.url, ...ADMIN });
  await (await jetstreamManager(admin)).streams.delete(`KV_${CAPACITY_BUCKET}`);
  await admin.close();
  const nc = await connectNats({ servers: server.url, ...WORKER });
  try {
    await jetstreamCapacityStore(nc).then(
      () => assert.unreachable('opened a missing bucket'),
      (err: Error) => {
        assert.match(err.message, `KV bucket ${CAPACITY_BUCKET}`);
        assert.match(err.message, 'sessiond setup');
      },
    );
  } finally {
    await nc.close();
    await setupStreams(server.url);
  }
});

test('capacity kv - a client user may not write the bucket', async () => {
  server ??= await startNatsServer();
  const nc = await connectNats({ servers: server.url, ...CLIENT });
  try {
    const refused = await (async () => {
      try {
        const kv = await new Kvm(nc).open(CAPACITY_BUCKET);
        await kv.put('state', '{}', { timeout: 1_000 } as never);
        return false;
      } catch {
        return true;
      }
    })();
    assert.ok(refused, 'the client user was refused');
  } finally {
    await nc.close();
  }
});

test.after(async () => {
  await server?.dispose();
});
test.run();
