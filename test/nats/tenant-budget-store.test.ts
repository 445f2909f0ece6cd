// The TenantBudgetStore contract on JetStream KV (bucket SESSIOND_BUDGETS, as the worker user of
// the shipped nats.conf: one connection per store), and who may write the bucket.
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BUDGETS_BUCKET, jetstreamTenantBudgetStore } from '../../src/budget/kv-tenant-budget-store.ts';
import { changeTenantBudget } from '../../src/budget/tenant.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { tenantBudgetStoreContract } from '../../src/testing/tenant-budget-store-contract.ts';
import { ADMIN, CLIENT, setupStreams, startNatsServer, WORKER, type NatsServer } from '../../src/testing/nats-server.ts';

let server: NatsServer | undefined;

async function resetBucket(): Promise<void> {
  const admin = await connectNats({ servers: server!.url, ...ADMIN });
  await (await jetstreamManager(admin)).streams.delete(`KV_${BUDGETS_BUCKET}`).catch(() => undefined);
  await admin.close();
  await setupStreams(server!.url);
}

const contract = tenantBudgetStoreContract('jetstream kv, as the worker user', async () => {
  server ??= await startNatsServer();
  const conns: NatsConnection[] = [];
  return {
    open: async () => {
      const nc = await connectNats({ servers: server!.url, ...WORKER });
      conns.push(nc);
      return jetstreamTenantBudgetStore(nc);
    },
    cleanup: async () => {
      for (const nc of conns) await nc.close();
      await resetBucket();
    },
  };
});
contract.run();

test('budgets kv - the admin sets a budget the workers read; a deployment without the bucket is told to run setup', async () => {
  server ??= await startNatsServer();
  const admin = await connectNats({ servers: server.url, ...ADMIN });
  const worker = await connectNats({ servers: server.url, ...WORKER });
  try {
    await (await jetstreamTenantBudgetStore(admin)).update('acme', (b) => changeTenantBudget(b, { tokens: 50 }, 1));
    assert.is((await (await jetstreamTenantBudgetStore(worker)).read('acme'))?.tokens, 50);
    await (await jetstreamManager(admin)).streams.delete(`KV_${BUDGETS_BUCKET}`);
    const err = await jetstreamTenantBudgetStore(worker).catch((e: Error) => e);
    assert.instance(err, Error);
    assert.match((err as Error).message, `KV bucket ${BUDGETS_BUCKET}`);
    assert.match((err as Error).message, 'sessiond setup');
  } finally {
    await admin.close();
    await worker.close();
    await setupStreams(server.url);
  }
});

test('budgets kv - a client user may not write the bucket', async () => {
  server ??= await startNatsServer();
  const nc = await connectNats({ servers: server.url, ...CLIENT });
  try {
    const refused = await (async () => {
      try {
        const kv = await new Kvm(nc).open(BUDGETS_BUCKET);
        await kv.put('t_YWNtZQ', '{}', { timeout: 1_000 } as never);
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
