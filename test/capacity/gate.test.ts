import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type CallRequest, type CallSlot, openModelCallGate, readCapacity } from '../../src/capacity/gate.ts';
import { sqliteCapacityStore } from '../../src/capacity/sqlite-capacity-store.ts';
import type { CapacityStore } from '../../src/capacity/store.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { openDatabase, type Db } from '../../src/storage/sqlite/database.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';

const P = 'http://provider.test/v1';
let n = 0;
const req = (tenant: string | null = 'acme', model = 'gpt'): CallRequest => ({ sessionId: `ses_${++n}`, executionId: `exe_${n}`, tenant, provider: P, model });
const never = () => new AbortController().signal;

/** Stores on one file, one connection each, counting their writes; `broken` fails every call (a dead process). */
function files() {
  const tmp = tempDir();
  const dbs: Db[] = [];
  const open = () => {
    const db = openDatabase(tmp.file('cap.db'));
    migrate(db);
    dbs.push(db);
    const inner = sqliteCapacityStore(db);
    const store = {
      updates: 0,
      broken: false,
      read: () => (store.broken ? Promise.reject(new Error('dead')) : inner.read()),
      update: ((change) => {
        if (store.broken) return Promise.reject(new Error('dead'));
        store.updates++;
        return inner.update(change);
      }) as CapacityStore['update'],
      close: () => inner.close(),
    };
    return store as CapacityStore & { updates: number; broken: boolean };
  };
  const done = () => {
    for (const d of dbs) d.close();
    tmp.remove();
  };
  return { open, done };
}

test('gate - with no limit and no back-off a call costs no store write', async () => {
  const f = files();
  const store = f.open();
  const gate = await openModelCallGate(store, { ownerId: 'w1', limits: {}, leaseMs: 30_000 });
  try {
    const before = store.updates;
    const slots = await Promise.all(Array.from({ length: 20 }, () => gate.acquire(req(), never())));
    await Promise.all(slots.map((s) => s.release()));
    assert.is(store.updates, before, 'no write for 20 free calls');
    assert.is((await store.read()).slots.length, 0);
  } finally {
    await gate.close();
    f.done();
  }
});

test('gate - two workers on one file, limit 2: never more than 2 in flight, every call served, waiters told once', async () => {
  const f = files();
  const gates = await Promise.all(
    ['w1', 'w2'].map((ownerId) => openModelCallGate(f.open(), { ownerId, limits: { models: { '*': 2 } }, leaseMs: 5_000, pollMs: 20 })),
  );
  try {
    let inFlight = 0;
    let max = 0;
    let waits = 0;
    const run = async (i: number) => {
      const slot = await gates[i % 2]!.acquire(req(), never(), () => waits++);
      inFlight++;
      max = Math.max(max, inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      await slot.release();
      await slot.release(); // idempotent
    };
    await Promise.all(Array.from({ length: 16 }, (_, i) => run(i)));
    assert.is(max, 2);
    assert.ok(waits >= 14 && waits <= 14, `14 calls waited, each told once (${waits})`);
    // the view is the fleet as this gate last read it: the other gate's last release shows within a poll
    let view = await gates[0]!.view();
    await waitFor(async () => (view = await gates[0]!.view()).limits.length === 0, { what: "gate w1's view to show the last release", timeoutMs: 5_000 }).catch(
      () => assert.equal(view.limits, [], 'a "*" limit shows by the names in use: none now'),
    );
    assert.equal([view.waiting, view.backoff], [[], []]);
  } finally {
    for (const g of gates) await g.close();
    f.done();
  }
});

test('gate - the heartbeat renews the worker every third of its lease: a slot held for many leases stays held', async () => {
  const f = files();
  const store = f.open();
  const gate = await openModelCallGate(store, { ownerId: 'w1', limits: { models: { '*': 1 } }, leaseMs: 150, pollMs: 20 });
  try {
    const slot = await gate.acquire(req(), never());
    const first = (await store.read()).workers.w1!.expiresAt;
    await waitFor(async () => (await store.read()).workers.w1!.expiresAt > first + 600, { what: 'four leases of renewals', timeoutMs: 5_000 });
    assert.is((await store.read()).slots.length, 1, 'still held');
    await slot.release();
  } finally {
    await gate.close();
    f.done();
  }
});

test('gate - a local release wakes a local waiter at once, without waiting for the poll', async () => {
  const f = files();
  const gate = await openModelCallGate(f.open(), { ownerId: 'w1', limits: { models: { gpt: 1 } }, leaseMs: 60_000, pollMs: 60_000 });
  try {
    const first = await gate.acquire(req(), never());
    let waited: { scopes: string[] } | undefined;
    const second = gate.acquire(req(), never(), (w) => {
      waited = w;
    });
    await waitFor(() => waited !== undefined, { what: 'the second call waiting', timeoutMs: 2_000 });
    assert.equal(waited!.scopes, ['model:gpt']);
    const started = Date.now();
    await first.release();
    await (await second).release();
    assert.ok(Date.now() - started < 1_000, 'granted long before the 60 s poll');
  } finally {
    await gate.close();
    f.done();
  }
});

test('gate - an aborted wait rejects with the signal’s reason and leaves the queue', async () => {
  const f = files();
  const store = f.open();
  const gate = await openModelCallGate(store, { ownerId: 'w1', limits: { tenants: { acme: 1 } }, leaseMs: 60_000, pollMs: 20 });
  try {
    const held = await gate.acquire(req(), never());
    const ac = new AbortController();
    let waiting = false;
    const p = gate.acquire(req(), ac.signal, () => {
      waiting = true;
    });
    await waitFor(() => waiting, { what: 'waiting', timeoutMs: 2_000 });
    ac.abort(new Error('turn cancelled'));
    await p.then(
      () => assert.unreachable('granted'),
      (err: Error) => assert.is(err.message, 'turn cancelled'),
    );
    assert.is((await store.read()).waiters.length, 0);
    await held.release();
    assert.is((await store.read()).slots.length, 0, 'the aborted call was not granted the freed slot');
  } finally {
    await gate.close();
    f.done();
  }
});

test('gate - a worker that dies holding a slot loses it within its lease; the other worker gets it', async () => {
  const f = files();
  const deadStore = f.open();
  const dying = await openModelCallGate(deadStore, { ownerId: 'dying', limits: { models: { '*': 1 } }, leaseMs: 300, pollMs: 20 });
  const alive = await openModelCallGate(f.open(), { ownerId: 'alive', limits: { models: { '*': 1 } }, leaseMs: 300, pollMs: 20 });
  try {
    await dying.acquire(req(), never());
    deadStore.broken = true; // its process is gone: no heartbeat, no release
    const started = Date.now();
    const slot = await alive.acquire(req(), never());
    const took = Date.now() - started;
    assert.ok(took < 300 + 300, `freed within about a lease (${took} ms)`);
    await slot.release();
  } finally {
    await dying.close().catch(() => undefined); // its timers stop; its store refuses the goodbye
    await alive.close();
    f.done();
  }
});

test('gate - a worker frozen past its lease loses its waiter, then enters it again when it wakes, and is served', async () => {
  const f = files();
  const frozenStore = f.open();
  const holder = await openModelCallGate(f.open(), { ownerId: 'holder', limits: { models: { '*': 1 } }, leaseMs: 150, pollMs: 20 });
  const frozen = await openModelCallGate(frozenStore, { ownerId: 'frozen', limits: { models: { '*': 1 } }, leaseMs: 200, pollMs: 20 });
  try {
    const held = await holder.acquire(req(), never());
    let waiting = false;
    const call = frozen.acquire(req(), never(), () => {
      waiting = true;
    });
    await waitFor(() => waiting, { what: 'the call waiting', timeoutMs: 2_000 });
    frozenStore.broken = true; // no heartbeat, no poll gets through
    await waitFor(async () => (await holder.view()).workers.every((w) => w.ownerId !== 'frozen'), { what: 'the frozen worker dropped', timeoutMs: 5_000 });
    assert.is((await holder.view()).waiting.length, 0, 'its waiter went with it');
    frozenStore.broken = false;
    await held.release();
    await (await call).release();
  } finally {
    await frozen.close();
    await holder.close();
    f.done();
  }
});

test('gate - a 429 backs the whole fleet off the provider, said once; calls wait until it ends', async () => {
  const f = files();
  const backoffs: [string, number, number][] = [];
  const a = await openModelCallGate(f.open(), { ownerId: 'a', limits: {}, leaseMs: 30_000, pollMs: 20, onBackoff: (...x) => backoffs.push(x) });
  // pollMs 0: b reads the fleet's back-offs at every call (by default a call may miss one up to pollMs old)
  const b = await openModelCallGate(f.open(), { ownerId: 'b', limits: {}, leaseMs: 30_000, pollMs: 0 });
  try {
    const slot = await a.acquire(req(), never());
    await slot.throttled(400);
    await slot.release();
    assert.is(backoffs.length, 1);
    assert.is(backoffs[0]![0], P);
    assert.is(backoffs[0]![2], 1);
    const until = backoffs[0]![1];
    let waited = false;
    const next = await b.acquire(req(), never(), () => {
      waited = true;
    });
    assert.ok(waited, 'a call to the provider in back-off waits (even with no limit)');
    assert.ok(Date.now() >= until, 'not granted before the back-off ends');
    await next.release();
    assert.equal((await b.view()).backoff, [], 'a call after the back-off that succeeded lowers the level to none');
  } finally {
    await a.close();
    await b.close();
    f.done();
  }
});

test('gate - two workers with different limits: the stricter applies and the looser worker says so', async () => {
  const f = files();
  const said: string[] = [];
  const strict = await openModelCallGate(f.open(), { ownerId: 'strict', limits: { models: { '*': 1 } }, leaseMs: 30_000, pollMs: 20 });
  const loose = await openModelCallGate(f.open(), {
    ownerId: 'loose',
    limits: { models: { '*': 4 } },
    leaseMs: 30_000,
    pollMs: 20,
    onStricter: (m) => said.push(m),
  });
  try {
    assert.equal(said, ['model-call limit "models"."*" is 4 here but 1 on worker strict: the stricter (1) applies to the whole fleet']);
    const one = await loose.acquire(req(), never());
    let waited = false;
    const two = loose.acquire(req(), never(), () => {
      waited = true;
    });
    await waitFor(() => waited, { what: 'the second call waiting under the stricter limit', timeoutMs: 2_000 });
    await one.release();
    await (await two).release();
  } finally {
    await strict.close();
    await loose.close();
    f.done();
  }
});

test('gate - close releases the worker’s slots and rejects its waiters; readCapacity shows what waits', async () => {
  const f = files();
  const store = f.open();
  const gate = await openModelCallGate(store, { ownerId: 'w1', limits: { models: { gpt: 1 } }, leaseMs: 30_000, pollMs: 20 });
  await gate.acquire(req('acme'), never());
  let waited = false;
  const pending = gate.acquire(req('beta'), never(), () => {
    waited = true;
  });
  await waitFor(() => waited, { what: 'waiting', timeoutMs: 2_000 });
  const view = await readCapacity(store, Date.now());
  assert.equal(view.limits, [{ scope: 'model:gpt', limit: 1, inFlight: 1, waiting: 1 }]);
  assert.equal(
    view.waiting.map((w) => [w.tenant, w.scopes]),
    [['beta', ['model:gpt']]],
  );
  assert.equal(
    view.workers.map((w) => w.ownerId),
    ['w1'],
  );
  await gate.close();
  await pending.then(
    () => assert.unreachable('granted after close'),
    (err: Error) => assert.is(err.name, 'ShutdownError'),
  );
  const after = await store.read();
  assert.equal([after.slots.length, after.waiters.length, Object.keys(after.workers).length], [0, 0, 0]);
  f.done();
});

test('gate - a call unlimited here but limited by another worker’s file is limited', async () => {
  const f = files();
  const other = await openModelCallGate(f.open(), { ownerId: 'other', limits: { tenants: { acme: 1 } }, leaseMs: 30_000, pollMs: 20 });
  const none = await openModelCallGate(f.open(), { ownerId: 'none', limits: {}, leaseMs: 30_000, pollMs: 20 });
  try {
    const slots: CallSlot[] = [await none.acquire(req('acme'), never())];
    let waited = false;
    const second = none.acquire(req('acme'), never(), () => {
      waited = true;
    });
    await waitFor(() => waited, { what: 'the second acme call waiting', timeoutMs: 2_000 });
    slots.push(await none.acquire(req('other'), never()));
    await slots[0]!.release();
    slots.push(await second);
    for (const s of slots) await s.release();
  } finally {
    await other.close();
    await none.close();
    f.done();
  }
});

test.run();
