/**
 * The CapacityStore contract, run against every implementation. `open()` opens one more store on the
 * same storage (another worker's): updates through any must never lose one another's change.
 *
 *   capacityStoreContract('sqlite', async () => ({ open: async () => store, cleanup })).run();
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { emptyCapacityState, heartbeat, release, wait } from '../capacity/decide.ts';
import type { CapacityStore } from '../capacity/store.ts';

export interface CapacityStoreFixture {
  open: () => Promise<CapacityStore>;
  cleanup: () => Promise<void>;
}

const call = (id: string, ownerId: string) => ({
  id,
  ownerId,
  sessionId: `ses_${id}`,
  executionId: `exe_${id}`,
  tenant: 'acme',
  provider: 'http://p/v1',
  model: 'm',
});

export function capacityStoreContract(name: string, setup: () => Promise<CapacityStoreFixture>) {
  const s = suite<{ fx: CapacityStoreFixture; stores: CapacityStore[] }>(`CapacityStore contract (${name})`);
  s.before.each(async (ctx) => {
    ctx.fx = await setup();
    ctx.stores = [];
  });
  s.after.each(async (ctx) => {
    for (const store of ctx.stores) await store.close();
    await ctx.fx.cleanup();
  });
  const open = async (ctx: { fx: CapacityStoreFixture; stores: CapacityStore[] }) => {
    const store = await ctx.fx.open();
    ctx.stores.push(store);
    return store;
  };

  s('capacity store - reads as empty before anything was written', async (ctx) => {
    const store = await open(ctx);
    assert.equal(await store.read(), emptyCapacityState());
  });

  s('capacity store - an update is read back by another store on the same storage, with its result', async (ctx) => {
    const [a, b] = [await open(ctx), await open(ctx)];
    const result = await a.update((st) => {
      const state = wait(heartbeat(st, 1_000, 'w1', { models: { '*': 1 } }, 30_000), 1_000, call('c1', 'w1'));
      return { state, result: state.slots.length };
    });
    assert.is(result, 1);
    const seen = await b.read();
    assert.equal(Object.keys(seen.workers), ['w1']);
    assert.equal(
      seen.slots.map((x) => x.id),
      ['c1'],
    );
  });

  s('capacity store - an update that changes nothing returns its result and leaves the state', async (ctx) => {
    const store = await open(ctx);
    await store.update((st) => ({ state: heartbeat(st, 1, 'w1', {}, 30_000), result: undefined }));
    const before = await store.read();
    assert.is(await store.update((st) => ({ state: st, result: 'same' })), 'same');
    assert.equal(await store.read(), before);
  });

  s('capacity store - concurrent updates from two stores never lose one, nor exceed a limit', async (ctx) => {
    const [a, b] = [await open(ctx), await open(ctx)];
    await a.update((st) => ({
      state: heartbeat(heartbeat(st, 1, 'wa', { models: { '*': 5 } }, 60_000), 1, 'wb', { models: { '*': 5 } }, 60_000),
      result: null,
    }));
    const N = 20;
    await Promise.all(
      Array.from({ length: N }, (_, i) => {
        const [store, owner] = i % 2 === 0 ? [a, 'wa'] : [b, 'wb'];
        return store.update((st) => ({ state: wait(st, 2 + i, call(`c${i}`, owner)), result: null }));
      }),
    );
    const st = await b.read();
    assert.is(st.slots.length, 5, 'exactly the limit in flight');
    assert.is(st.slots.length + st.waiters.length, N, 'no call lost');
    // releases racing from both sides hand every slot on: all calls are eventually served once
    const served = new Set<string>();
    for (let round = 0; round < N; round++) {
      const now = await a.read();
      if (now.slots.length === 0) break;
      await Promise.all(
        now.slots.map((slot, i) =>
          (i % 2 === 0 ? a : b).update((x) => {
            served.add(slot.id);
            return { state: release(x, 100 + round, slot.id), result: null };
          }),
        ),
      );
    }
    assert.is(served.size, N);
    const end = await a.read();
    assert.is(end.slots.length + end.waiters.length, 0);
  });

  s('capacity store - a change that throws changes nothing and rejects with its error', async (ctx) => {
    const store = await open(ctx);
    await store.update((st) => ({ state: heartbeat(st, 1, 'w1', {}, 30_000), result: null }));
    const before = await store.read();
    try {
      await store.update(() => {
        throw new Error('boom');
      });
      assert.unreachable('rejected');
    } catch (err) {
      assert.is((err as Error).message, 'boom');
    }
    assert.equal(await store.read(), before);
  });

  return s;
}
