/**
 * The TenantBudgetStore contract, run against every implementation. `open()` opens one more store on
 * the same storage (another worker's): counts through any must never lose one another's.
 *
 *   tenantBudgetStoreContract('sqlite', async () => ({ open: async () => store, cleanup })).run();
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { changeTenantBudget, countCall } from '../budget/tenant.ts';
import type { TenantBudgetStore } from '../budget/tenant-store.ts';

export interface TenantBudgetStoreFixture {
  open: () => Promise<TenantBudgetStore>;
  cleanup: () => Promise<void>;
}

const usage = (tokens: number, costUsd?: number) => ({ inputTokens: tokens, outputTokens: 0, ...(costUsd === undefined ? {} : { costUsd }) });

export function tenantBudgetStoreContract(name: string, setup: () => Promise<TenantBudgetStoreFixture>) {
  const s = suite<{ fx: TenantBudgetStoreFixture; stores: TenantBudgetStore[] }>(`TenantBudgetStore contract (${name})`);
  s.before.each(async (ctx) => {
    ctx.fx = await setup();
    ctx.stores = [];
  });
  s.after.each(async (ctx) => {
    for (const store of ctx.stores) await store.close();
    await ctx.fx.cleanup();
  });
  const open = async (ctx: { fx: TenantBudgetStoreFixture; stores: TenantBudgetStore[] }) => {
    const store = await ctx.fx.open();
    ctx.stores.push(store);
    return store;
  };

  s('tenant budget store - a tenant without a budget reads null, and the list is empty', async (ctx) => {
    const store = await open(ctx);
    assert.is(await store.read('acme'), null);
    assert.equal([...(await store.list())], []);
  });

  s('tenant budget store - a budget set through one store is read by another, by tenant, and listed', async (ctx) => {
    const [a, b] = [await open(ctx), await open(ctx)];
    const set = await a.update('acme', (x) => changeTenantBudget(x, { tokens: 1_000 }, 5));
    assert.equal(set, { tokens: 1_000, costUsd: null, spent: { tokens: 0, costUsd: 0 }, since: 5, counted: [] });
    await a.update('token:ops@x', (x) => changeTenantBudget(x, { costUsd: 2 }, 6));
    assert.equal(await b.read('acme'), set);
    assert.is(await b.read('globex'), null, 'another tenant has none');
    assert.equal([...(await b.list()).keys()], ['acme', 'token:ops@x'], 'every name, even one with characters a KV key cannot hold');
  });

  s('tenant budget store - counts from two stores at once are all kept; a call counted twice counts once', async (ctx) => {
    const [a, b] = [await open(ctx), await open(ctx)];
    await a.update('acme', (x) => changeTenantBudget(x, { tokens: 1_000_000, costUsd: 100 }, 1));
    const N = 20;
    await Promise.all(Array.from({ length: N }, (_, i) => (i % 2 === 0 ? a : b).update('acme', (x) => countCall(x, `msg_${i}`, usage(10, 0.01)))));
    await b.update('acme', (x) => countCall(x, 'msg_3', usage(10, 0.01))); // a retried count
    const seen = await a.read('acme');
    assert.equal(seen?.spent, { tokens: 10 * N, costUsd: 0.2 });
    assert.is(seen?.counted.length, N);
  });

  s('tenant budget store - clearing both limits removes the budget; a change that throws changes nothing', async (ctx) => {
    const store = await open(ctx);
    await store.update('acme', (x) => changeTenantBudget(x, { tokens: 10 }, 1));
    await store.update('acme', (x) => countCall(x, 'msg_1', usage(4)));
    const before = await store.read('acme');
    const err = await store
      .update('acme', () => {
        throw new Error('boom');
      })
      .catch((e: Error) => e);
    assert.is((err as Error).message, 'boom');
    assert.equal(await store.read('acme'), before);
    assert.is(await store.update('acme', (x) => changeTenantBudget(x, { tokens: null, costUsd: null }, 2)), null);
    assert.is(await store.read('acme'), null);
    assert.equal([...(await store.list())], []);
    assert.is(await store.update('acme', (x) => countCall(x, 'msg_2', usage(4))), null, 'a tenant without a budget is not counted');
    assert.is(await store.read('acme'), null);
  });

  return s;
}
