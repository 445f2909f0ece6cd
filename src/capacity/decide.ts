/**
 * The capacity decider: pure `(state, now, ...) => state` transitions over the shared
 * `CapacityState`, each ending with `grant`, so whichever worker writes grants free slots for all.
 * Strictest limit among live workers, fair grants by tenant, fleet-wide 429 back-off with the limit
 * halved per level: docs/operating.md#limits-on-model-calls.
 */
import {
  type CallLimits,
  type CallNames,
  LIMIT_PARTS,
  limitOfScope,
  mergeCallLimits,
  scopeName,
  scopesOf,
  SCOPE_PREFIX,
  type LimitPart,
} from './limits-file.ts';

export interface WorkerEntry {
  expiresAt: number;
  limits: CallLimits;
}

/** A model call the shared state holds, in flight or waiting. */
export interface CallEntry extends CallNames {
  id: string;
  ownerId: string;
  sessionId: string;
  executionId: string;
  /** The limited scopes it draws from (for people; counting uses its names). */
  scopes: string[];
  /** A slot: when it was granted. A waiter: when it started to wait. */
  since: number;
}

/** A call in flight. */
export type Slot = CallEntry;

/** A call waiting for a slot. */
export type Waiter = CallEntry;

export interface Backoff {
  until: number;
  level: number;
}

export interface CapacityState {
  workers: Record<string, WorkerEntry>;
  slots: Slot[];
  waiters: Waiter[];
  backoff: Record<string, Backoff>;
  /**
   * Fairness between tenants with equal slots: each tenant's (JSON of its name, `null` for none)
   * number of its last grant, counted by `grants`. Only tenants holding or awaiting a slot are kept.
   */
  served: Record<string, number>;
  grants: number;
}

/** The first back-off (level 1) lasts about this long; each level doubles it. */
export const BACKOFF_BASE_MS = 1_000;
/** The longest back-off of our own: a server's Retry-After may ask for longer, and gets it. */
export const BACKOFF_CAP_MS = 60_000;

export function emptyCapacityState(): CapacityState {
  return { workers: {}, slots: [], waiters: [], backoff: {}, served: {}, grants: 0 };
}

/** Names a call draws from, limited or not: `model:M`, `provider:P`, and `tenant:T` when it has one. */
export function keysOf(call: CallNames): string[] {
  const keys = [scopeName('models', call.model), scopeName('providers', call.provider)];
  if (call.tenant !== null) keys.push(scopeName('tenants', call.tenant));
  return keys;
}

const live = (state: CapacityState, now: number) => Object.entries(state.workers).filter(([, w]) => w.expiresAt > now);

/** The limits that apply to the fleet: each entry the strictest among live workers. */
export function fleetLimits(state: CapacityState, now: number): CallLimits {
  return live(state, now).reduce<CallLimits>((acc, [, w]) => mergeCallLimits(acc, w.limits), {});
}

/** The limit of a scope now: the fleet's, halved per back-off level for a provider (at least 1). */
export function scopeLimit(state: CapacityState, limits: CallLimits, scope: string): number | undefined {
  const limit = limitOfScope(limits, scope);
  if (limit === undefined) return undefined;
  const prefix = `${SCOPE_PREFIX.providers}:`;
  if (!scope.startsWith(prefix)) return limit;
  const level = state.backoff[scope.slice(prefix.length)]?.level ?? 0;
  return Math.max(1, Math.floor(limit / 2 ** level));
}

/** Slots in flight per key (every name a slot draws from, limited or not). */
function inFlight(slots: readonly Slot[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const s of slots) for (const k of keysOf(s)) counts.set(k, (counts.get(k) ?? 0) + 1);
  return counts;
}

const tenantKey = (tenant: string | null) => JSON.stringify(tenant);

/**
 * Drops what expired workers held, then grants waiters while one is eligible, fairly between
 * tenants: the eligible waiter whose tenant holds the fewest slots; between tenants holding as
 * many, the one served longest ago (so with a limit of 1, tenants take turns); then the oldest
 * `since`.
 */
export function grant(state: CapacityState, now: number): CapacityState {
  const alive = withoutExpired(state, now);
  const { workers, backoff } = alive;
  let { slots, waiters } = alive;
  const served = { ...state.served };
  let grants = state.grants;
  const base: CapacityState = { workers, slots, waiters, backoff, served, grants };
  const limits = fleetLimits(base, now);
  const counts = inFlight(slots);
  const held = new Map<string, number>();
  for (const s of slots) held.set(tenantKey(s.tenant), (held.get(tenantKey(s.tenant)) ?? 0) + 1);
  for (;;) {
    let best: Waiter | undefined;
    let bestHeld = 0;
    let bestServed = 0;
    for (const w of waiters) {
      if ((backoff[w.provider]?.until ?? 0) > now) continue;
      const room = keysOf(w).every((k) => {
        const limit = scopeLimit(base, limits, k);
        return limit === undefined || (counts.get(k) ?? 0) < limit;
      });
      if (!room) continue;
      const h = held.get(tenantKey(w.tenant)) ?? 0;
      const last = served[tenantKey(w.tenant)] ?? -1;
      const before =
        !best ||
        h < bestHeld ||
        (h === bestHeld && (last < bestServed || (last === bestServed && (w.since < best.since || (w.since === best.since && w.id < best.id)))));
      if (before) {
        best = w;
        bestHeld = h;
        bestServed = last;
      }
    }
    if (!best) break;
    const chosen = best;
    waiters = waiters.filter((w) => w !== chosen);
    const scopes = scopesOf(limits, chosen).map((s) => s.scope);
    slots = [...slots, { ...chosen, scopes, since: now }];
    for (const k of keysOf(chosen)) counts.set(k, (counts.get(k) ?? 0) + 1);
    held.set(tenantKey(chosen.tenant), bestHeld + 1);
    served[tenantKey(chosen.tenant)] = grants++;
  }
  const active = new Set([...slots, ...waiters].map((x) => tenantKey(x.tenant)));
  for (const key of Object.keys(served)) if (!active.has(key)) delete served[key];
  return { workers, slots, waiters, backoff, served, grants };
}

/** The state without the workers whose heartbeat expired, nor their slots and waiters. */
export function withoutExpired(state: CapacityState, now: number): CapacityState {
  const workers = Object.fromEntries(live(state, now));
  return {
    ...state,
    workers,
    slots: state.slots.filter((s) => Object.hasOwn(workers, s.ownerId)),
    waiters: state.waiters.filter((w) => Object.hasOwn(workers, w.ownerId)),
    backoff: Object.fromEntries(Object.entries(state.backoff).filter(([, b]) => b.level > 0 || b.until > now)),
  };
}

/** A worker's heartbeat: it is live until `now + leaseMs`, with these limits. */
export function heartbeat(state: CapacityState, now: number, ownerId: string, limits: CallLimits, leaseMs: number): CapacityState {
  return grant({ ...state, workers: { ...state.workers, [ownerId]: { expiresAt: now + leaseMs, limits } } }, now);
}

/** A worker leaves: its entry, slots and waiters go. */
export function depart(state: CapacityState, now: number, ownerId: string): CapacityState {
  const { [ownerId]: _gone, ...workers } = state.workers;
  return grant(
    { ...state, workers, slots: state.slots.filter((s) => s.ownerId !== ownerId), waiters: state.waiters.filter((w) => w.ownerId !== ownerId) },
    now,
  );
}

export type WaitRequest = Omit<Waiter, 'since' | 'scopes'>;

/** A call asks for a slot: it waits (and is granted at once when it can be). An id already known changes nothing. */
export function wait(state: CapacityState, now: number, request: WaitRequest): CapacityState {
  if (state.waiters.some((w) => w.id === request.id) || state.slots.some((s) => s.id === request.id)) return grant(state, now);
  const scopes = scopesOf(fleetLimits(state, now), request).map((s) => s.scope);
  return grant({ ...state, waiters: [...state.waiters, { ...request, scopes, since: now }] }, now);
}

/** A call ended: its slot goes to the next waiter. An unknown id changes nothing. */
export function release(state: CapacityState, now: number, slotId: string): CapacityState {
  return grant({ ...state, slots: state.slots.filter((s) => s.id !== slotId) }, now);
}

/** A waiting call gave up (aborted). */
export function leave(state: CapacityState, now: number, waiterId: string): CapacityState {
  return grant({ ...state, waiters: state.waiters.filter((w) => w.id !== waiterId) }, now);
}

/**
 * A provider answered 429 (or overloaded). The level rises by one when the previous back-off had
 * ended (one storm raises it once); the back-off lasts `max(retryAfterMs, base * 2^(level-1) * jitter)`
 * (ours capped at BACKOFF_CAP_MS, the server's honoured whatever its length), never ending sooner than
 * one already running. `random` in [0, 1): jitter from 0.5 to 1.
 */
export function throttled(state: CapacityState, now: number, provider: string, retryAfterMs: number | undefined, random: number): CapacityState {
  const prev = state.backoff[provider];
  const level = !prev ? 1 : prev.until <= now ? prev.level + 1 : Math.max(1, prev.level);
  const ours = Math.min(BACKOFF_CAP_MS, Math.round(BACKOFF_BASE_MS * 2 ** (level - 1) * (0.5 + Math.min(Math.max(random, 0), 1) / 2)));
  const wanted = retryAfterMs !== undefined && Number.isFinite(retryAfterMs) && retryAfterMs > 0 ? Math.ceil(retryAfterMs) : 0;
  const until = Math.max(prev?.until ?? 0, now + Math.max(wanted, ours));
  return grant({ ...state, backoff: { ...state.backoff, [provider]: { until, level } } }, now);
}

/**
 * A call granted at `grantedAt` on `provider` ended without a 429: if it was granted after the
 * provider's back-off ended, the level falls by one (at 0 the back-off is gone).
 */
export function succeeded(state: CapacityState, now: number, provider: string, grantedAt: number): CapacityState {
  const b = state.backoff[provider];
  if (!b || grantedAt < b.until) return grant(state, now);
  const { [provider]: _old, ...rest } = state.backoff;
  return grant({ ...state, backoff: b.level > 1 ? { ...rest, [provider]: { until: b.until, level: b.level - 1 } } : rest }, now);
}

/** One entry where another live worker is stricter than this one. `mine` undefined: this worker has no such entry. */
export interface StricterEntry {
  part: LimitPart;
  name: string;
  mine: number | undefined;
  applied: number;
  by: string;
}

/** The entries where another live worker's limit is stricter than `ownerId`'s (what applies is theirs). */
export function stricterElsewhere(state: CapacityState, now: number, ownerId: string): StricterEntry[] {
  const mine = state.workers[ownerId]?.limits ?? {};
  const out: StricterEntry[] = [];
  for (const part of LIMIT_PARTS) {
    const strictest = new Map<string, { limit: number; by: string }>();
    for (const [id, w] of live(state, now)) {
      if (id === ownerId) continue;
      for (const [name, limit] of Object.entries(w.limits[part] ?? {})) {
        const cur = strictest.get(name);
        if (!cur || limit < cur.limit) strictest.set(name, { limit, by: id });
      }
    }
    for (const [name, { limit, by }] of [...strictest].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const own = mine[part]?.[name];
      if (own === undefined || limit < own) out.push({ part, name, mine: own, applied: limit, by });
    }
  }
  return out;
}

/** What a worker says in its log about one stricter entry. */
export function describeStricter(e: StricterEntry): string {
  const entry = `"${e.part}"."${e.name}"`;
  return e.mine === undefined
    ? `model-call limit ${entry} = ${e.applied} applies from worker ${e.by}, whose limits file has it (this worker's has no such entry): the stricter applies`
    : `model-call limit ${entry} is ${e.mine} here but ${e.applied} on worker ${e.by}: the stricter (${e.applied}) applies to the whole fleet`;
}
