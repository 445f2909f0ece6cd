import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  type CapacityState,
  BACKOFF_CAP_MS,
  depart,
  emptyCapacityState,
  fleetLimits,
  grant,
  heartbeat,
  keysOf,
  leave,
  release,
  scopeLimit,
  stricterElsewhere,
  succeeded,
  throttled,
  wait,
} from '../../src/capacity/decide.ts';
import type { CallLimits } from '../../src/capacity/limits-file.ts';

const LEASE = 30_000;
const P = 'https://api.example/v1';
let n = 0;
const call = (tenant: string | null, extra: Partial<{ ownerId: string; model: string; provider: string; id: string }> = {}) => ({
  id: extra.id ?? `c${++n}`,
  ownerId: extra.ownerId ?? 'w1',
  sessionId: `ses_${n}`,
  executionId: `exe_${n}`,
  tenant,
  provider: extra.provider ?? P,
  model: extra.model ?? 'gpt',
});
const withWorker = (limits: CallLimits, now = 0, owner = 'w1', state = emptyCapacityState()) => heartbeat(state, now, owner, limits, LEASE);
const granted = (s: CapacityState, id: string) => s.slots.some((x) => x.id === id);

test('decide - grants at once while the scope has room, then queues; a release hands the slot to the waiter', () => {
  let s = withWorker({ models: { '*': 2 } });
  const [a, b, c] = [call('t'), call('t'), call('t')];
  s = wait(wait(wait(s, 1, a), 2, b), 3, c);
  assert.ok(granted(s, a.id) && granted(s, b.id));
  assert.not.ok(granted(s, c.id));
  assert.equal(s.waiters[0]!.scopes, ['model:gpt']);
  s = release(s, 4, a.id);
  assert.ok(granted(s, c.id));
  assert.is(s.waiters.length, 0);
});

test('decide - a dead worker’s slots and waiters are dropped when its heartbeat expires, and its slot goes to the next waiter', () => {
  let s = withWorker({ models: { '*': 1 } }, 0, 'dead');
  s = withWorker({ models: { '*': 1 } }, 0, 'alive', s);
  s = wait(s, 1, call('t', { ownerId: 'dead', id: 'held' }));
  s = wait(s, 2, call('t', { ownerId: 'alive', id: 'next' }));
  assert.ok(granted(s, 'held'));
  s = heartbeat(s, LEASE - 1, 'alive', { models: { '*': 1 } }, LEASE);
  assert.ok(granted(s, 'held'), 'still held inside the lease');
  s = grant(s, LEASE);
  assert.not.ok(granted(s, 'held'));
  assert.ok(granted(s, 'next'));
  assert.equal(Object.keys(s.workers), ['alive']);
});

test('decide - two workers with different limits: the stricter applies, and the looser worker is told which entry', () => {
  let s = withWorker({ models: { '*': 8 }, tenants: { acme: 4 } }, 0, 'loose');
  s = withWorker({ models: { '*': 2 }, providers: { [P]: 3 } }, 0, 'strict', s);
  assert.equal(fleetLimits(s, 1), { models: { '*': 2 }, tenants: { acme: 4 }, providers: { [P]: 3 } });
  for (let i = 0; i < 3; i++) s = wait(s, 1, call('t', { ownerId: 'loose' }));
  assert.is(s.slots.length, 2);
  const told = stricterElsewhere(s, 1, 'loose');
  assert.equal(
    told.map((e) => [e.part, e.name, e.mine, e.applied, e.by]),
    [
      ['models', '*', 8, 2, 'strict'],
      ['providers', P, undefined, 3, 'strict'],
    ],
  );
  assert.equal(stricterElsewhere(s, 1, 'strict'), [{ part: 'tenants', name: 'acme', mine: undefined, applied: 4, by: 'loose' }]);
  // once the strict worker is gone, its limits no longer apply
  s = depart(s, 2, 'strict');
  assert.is(s.slots.length, 3);
});

test('decide - fair between tenants: a flood of one tenant does not delay another tenant’s single call past the next free slot', () => {
  let s = withWorker({ models: { '*': 2 } });
  for (let i = 0; i < 200; i++) s = wait(s, i, call('flood', { id: `f${i}` }));
  s = wait(s, 500, call('single', { id: 'one' }));
  s = release(s, 501, 'f0');
  assert.ok(granted(s, 'one'), 'the next free slot goes to the tenant holding none');
  // with a limit of 1 tenants take turns too
  let t = withWorker({ models: { '*': 1 } });
  for (let i = 0; i < 5; i++) t = wait(t, i, call('a', { id: `a${i}` }));
  for (let i = 0; i < 2; i++) t = wait(t, 10 + i, call('b', { id: `b${i}` }));
  const order: string[] = [t.slots[0]!.id];
  while (t.slots.length > 0) {
    t = release(t, 20, t.slots[0]!.id);
    if (t.slots[0]) order.push(t.slots[0].id);
  }
  assert.equal(order, ['a0', 'b0', 'a1', 'b1', 'a2', 'a3', 'a4']);
});

test('decide - a tenant limit caps that tenant alone; a call with no tenant draws from none', () => {
  let s = withWorker({ tenants: { '*': 1 } });
  s = wait(wait(s, 1, call('a', { id: 'a1' })), 2, call('a', { id: 'a2' }));
  s = wait(wait(s, 3, call(null, { id: 'n1' })), 4, call(null, { id: 'n2' }));
  s = wait(s, 5, call('b', { id: 'b1' }));
  assert.equal(s.slots.map((x) => x.id).sort(), ['a1', 'b1', 'n1', 'n2']);
});

test('decide - 429: the fleet backs off the provider (Retry-After honoured whatever its length), its limit halves per level, success lowers it', () => {
  let s = withWorker({ providers: { [P]: 8 } });
  s = wait(s, 0, call('t', { id: 'x' }));
  s = throttled(s, 100, P, 120_000, 0.5);
  assert.equal(s.backoff[P], { until: 100 + 120_000, level: 1 }, 'a Retry-After of 2 minutes is honoured');
  assert.is(scopeLimit(s, fleetLimits(s, 100), `provider:${P}`), 4);
  s = wait(s, 200, call('t', { id: 'y' }));
  assert.not.ok(granted(s, 'y'), 'not granted during the back-off');
  // a second 429 of the same storm does not raise the level
  s = throttled(s, 300, P, undefined, 0.9);
  assert.is(s.backoff[P]!.level, 1);
  for (let t = 20_000; t < 120_100; t += 20_000) s = heartbeat(s, t, 'w1', { providers: { [P]: 8 } }, LEASE);
  assert.not.ok(granted(s, 'y'));
  s = heartbeat(s, 120_100, 'w1', { providers: { [P]: 8 } }, LEASE);
  assert.ok(granted(s, 'y'), 'granted once the back-off ended');
  s = heartbeat(s, 140_000, 'w1', { providers: { [P]: 8 } }, LEASE);
  s = heartbeat(s, 170_000, 'w1', { providers: { [P]: 8 } }, LEASE);
  s = heartbeat(s, 199_000, 'w1', { providers: { [P]: 8 } }, LEASE);
  // a 429 after it ended raises the level: our own delay doubles, with jitter, capped at a minute
  s = throttled(s, 200_000, P, undefined, 0);
  assert.equal(s.backoff[P], { until: 200_000 + 1_000, level: 2 });
  assert.is(scopeLimit(s, fleetLimits(s, 200_000), `provider:${P}`), 2);
  let big = s;
  for (let i = 0; i < 10; i++) big = throttled(big, big.backoff[P]!.until, P, undefined, 0.999);
  assert.is(scopeLimit(big, { providers: { [P]: 8 } }, `provider:${P}`), 1, 'halved, at least 1');
  // success of a call granted before the back-off ended changes nothing; after it, the level falls
  s = succeeded(s, 201_500, P, 150_000);
  assert.is(s.backoff[P]!.level, 2);
  s = succeeded(s, 201_500, P, 201_200);
  assert.is(s.backoff[P]!.level, 1);
  s = succeeded(s, 201_600, P, 201_200);
  assert.is(s.backoff[P], undefined);
});

test('decide - our own back-off is capped at 60 s; jitter keeps it between half and all of base * 2^(level-1)', () => {
  let s = withWorker({});
  s = throttled(s, 0, P, undefined, 0);
  assert.is(s.backoff[P]!.until, 500);
  for (let i = 0; i < 12; i++) s = throttled(s, s.backoff[P]!.until, P, undefined, 0.999999);
  const b = s.backoff[P]!;
  assert.is(b.level, 13);
  const start = 0; // cap: the last back-off is at most BACKOFF_CAP_MS long
  assert.ok(b.until - start > 0);
  const prev = throttled(s, b.until, P, undefined, 0.999999).backoff[P]!;
  assert.is(prev.until - b.until, BACKOFF_CAP_MS);
});

test('decide - leave removes a waiter; an unknown release or a repeated wait changes nothing', () => {
  let s = withWorker({ models: { '*': 1 } });
  const a = call('t', { id: 'a' });
  s = wait(s, 0, a);
  s = wait(s, 1, call('t', { id: 'b' }));
  s = leave(s, 2, 'b');
  assert.is(s.waiters.length, 0);
  assert.equal(release(s, 3, 'nope'), s);
  assert.equal(wait(s, 4, a), s);
});

// ---- properties --------------------------------------------------------------------------------

const TENANTS = ['a', 'b', 'c', null] as const;
const MODELS = ['m1', 'm2'];
const PROVIDERS = ['p1', 'p2'];
type Op =
  | { op: 'wait'; tenant: string | null; model: string; provider: string; owner: string }
  | { op: 'release'; pick: number }
  | { op: 'leave'; pick: number }
  | { op: 'throttle'; provider: string; retry: number | undefined; random: number }
  | { op: 'tick'; ms: number };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('wait' as const),
      tenant: fc.constantFrom(...TENANTS),
      model: fc.constantFrom(...MODELS),
      provider: fc.constantFrom(...PROVIDERS),
      owner: fc.constantFrom('w1', 'w2'),
    }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('release' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('leave' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('throttle' as const),
      provider: fc.constantFrom(...PROVIDERS),
      retry: fc.option(fc.nat(5_000), { nil: undefined }),
      random: fc.double({ min: 0, max: 0.999, noNaN: true }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('tick' as const), ms: fc.nat(3_000) }) },
);
const limitsArb: fc.Arbitrary<CallLimits> = fc.record(
  {
    models: fc.dictionary(fc.constantFrom('m1', '*'), fc.integer({ min: 1, max: 4 })),
    providers: fc.dictionary(fc.constantFrom('p1', '*'), fc.integer({ min: 1, max: 4 })),
    tenants: fc.dictionary(fc.constantFrom('a', 'b', '*'), fc.integer({ min: 1, max: 3 })),
  },
  { requiredKeys: [] },
);

function apply(s: CapacityState, now: number, op: Op, i: number): CapacityState {
  switch (op.op) {
    case 'wait':
      return wait(s, now, { id: `x${i}`, ownerId: op.owner, sessionId: 's', executionId: 'e', tenant: op.tenant, model: op.model, provider: op.provider });
    case 'release':
      return s.slots.length ? release(s, now, s.slots[op.pick % s.slots.length]!.id) : s;
    case 'leave':
      return s.waiters.length ? leave(s, now, s.waiters[op.pick % s.waiters.length]!.id) : s;
    case 'throttle':
      return throttled(s, now, op.provider, op.retry, op.random);
    case 'tick':
      return grant(s, now);
  }
}
const counts = (s: CapacityState) => {
  const m = new Map<string, number>();
  for (const x of s.slots) for (const k of keysOf(x)) m.set(k, (m.get(k) ?? 0) + 1);
  return m;
};

test('decide - property: a grant never puts a scope over its limit (halved in back-off), nor grants a provider in back-off', () => {
  fc.assert(
    fc.property(limitsArb, limitsArb, fc.array(opArb, { maxLength: 80 }), (l1, l2, ops) => {
      let now = 0;
      let s = withWorker(l2, 0, 'w2', withWorker(l1, 0, 'w1'));
      ops.forEach((op, i) => {
        if (op.op === 'tick') now += op.ms;
        s = heartbeat(heartbeat(s, now, 'w1', l1, LEASE), now, 'w2', l2, LEASE);
        const before = counts(s);
        const ids = new Set(s.slots.map((x) => x.id));
        const next = apply(s, now, op, i);
        const after = counts(next);
        const limits = fleetLimits(next, now);
        for (const [k, c] of after) {
          const limit = scopeLimit(next, limits, k);
          if (c > (before.get(k) ?? 0) && limit !== undefined) assert.ok(c <= limit, `${k}: ${c} in flight, limit ${limit}`);
        }
        for (const x of next.slots) if (!ids.has(x.id)) assert.ok((next.backoff[x.provider]?.until ?? 0) <= now, `granted ${x.provider} in back-off`);
        s = next;
      });
    }),
    { seed: 44, numRuns: 300 },
  );
});

test('decide - property: with fixed limits and no 429, never more in flight per scope than its limit', () => {
  fc.assert(
    fc.property(
      limitsArb,
      fc.array(
        opArb.filter((o) => o.op !== 'throttle'),
        { maxLength: 80 },
      ),
      (limits, ops) => {
        let s = withWorker(limits, 0, 'w1', withWorker(limits, 0, 'w2'));
        ops.forEach((op, i) => {
          s = apply(s, 0, op, i);
          for (const [k, c] of counts(s)) {
            const limit = scopeLimit(s, limits, k);
            if (limit !== undefined) assert.ok(c <= limit, `${k}: ${c} > ${limit}`);
          }
        });
      },
    ),
    { seed: 45, numRuns: 300 },
  );
});

test('decide - property: when slots free and back-offs end, every waiter is eventually granted', () => {
  fc.assert(
    fc.property(limitsArb, fc.array(opArb, { maxLength: 60 }), (limits, ops) => {
      let now = 0;
      let s = withWorker(limits, 0, 'w1', withWorker(limits, 0, 'w2'));
      ops.forEach((op, i) => {
        if (op.op === 'tick') now += op.ms;
        s = apply(s, now, op, i);
      });
      const waiting = new Set(s.waiters.map((w) => w.id));
      for (let round = 0; round < 500 && s.waiters.length > 0; round++) {
        now += 10_000; // inside the lease: the workers stay live
        s = heartbeat(heartbeat(s, now, 'w1', limits, LEASE), now, 'w2', limits, LEASE);
        for (const x of s.slots) {
          waiting.delete(x.id);
          s = release(s, now, x.id);
        }
      }
      for (const x of s.slots) waiting.delete(x.id);
      assert.is(s.waiters.length, 0, 'nobody left waiting');
      assert.is(waiting.size, 0);
    }),
    { seed: 46, numRuns: 300 },
  );
});

test('decide - property: fairness by order: a tenant holding fewer slots is granted before any of a tenant holding more', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 200 }), fc.integer({ min: 0, max: 3 }), (limit, flood, otherHeld) => {
      let s = withWorker({ models: { '*': limit } });
      for (let i = 0; i < flood; i++) s = wait(s, i, call('flood', { id: `f${i}` }));
      for (let i = 0; i < otherHeld; i++) s = wait(s, flood + i, call('other', { id: `o${i}` }));
      s = wait(s, flood + otherHeld, call('other', { id: 'last' }));
      // free the oldest slot, one at a time: each grant goes to a tenant holding no more slots than
      // any other tenant still waiting, so 'last' is granted within a bounded number of releases
      let releases = 0;
      while (!granted(s, 'last')) {
        const held = (tenant: string) => s.slots.filter((x) => x.tenant === tenant).length;
        const freed = s.slots[0]!;
        const free = { flood: held('flood') - (freed.tenant === 'flood' ? 1 : 0), other: held('other') - (freed.tenant === 'other' ? 1 : 0) };
        const waiting = new Set(s.waiters.map((w) => w.tenant));
        const ids = new Set(s.slots.map((x) => x.id));
        s = release(s, 10_000 + releases, freed.id);
        releases++;
        for (const x of s.slots.filter((y) => !ids.has(y.id))) {
          const mine = x.tenant as 'flood' | 'other';
          const theirs = mine === 'flood' ? 'other' : 'flood';
          if (waiting.has(theirs)) assert.ok(free[mine] <= free[theirs], `granted to ${mine} holding ${free[mine]} while ${theirs} held ${free[theirs]}`);
        }
        assert.ok(releases <= limit + 2 * (otherHeld + 1), `granted within ${limit + 2 * (otherHeld + 1)} releases (took ${releases})`);
      }
    }),
    { seed: 47, numRuns: 300 },
  );
});

test.run();
