/**
 * The model-call gate a worker holds: each model call asks it for a slot first. It keeps the worker's
 * heartbeat and limits in the shared CapacityStore, turns acquire/release/429 into the decider's
 * transitions (decide.ts) and wakes local waiters a write grants a slot. A call no limit or back-off
 * applies to writes nothing: the fleet's state is read at most once per `pollMs`, and cached.
 */
import { type Clock, systemClock, type TimerHandle } from '../clock.ts';
import { ShutdownError } from '../errors.ts';
import {
  type CapacityState,
  depart,
  describeStricter,
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
  withoutExpired,
} from './decide.ts';
import { type CallLimits, LIMIT_PARTS, scopeName, scopesOf, EACH } from './limits-file.ts';
import type { CapacityStore } from './store.ts';

export interface CallRequest {
  sessionId: string;
  executionId: string;
  tenant: string | null;
  provider: string;
  model: string;
}
export interface CallSlot {
  /** The call ended (any way): its slot goes to the next waiter. Idempotent. */
  release(): Promise<void>;
  /** The provider answered 429 (or overloaded): the fleet backs off for that provider. */
  throttled(retryAfterMs: number | undefined): Promise<void>;
}
export interface WaitingCall {
  sessionId: string;
  executionId: string;
  tenant: string | null;
  scopes: string[];
  since: number;
}
export interface CapacityView {
  limits: { scope: string; limit: number; inFlight: number; waiting: number }[];
  waiting: WaitingCall[];
  backoff: { provider: string; until: number; level: number }[];
  workers: { ownerId: string; expiresAt: number }[];
}
export interface ModelCallGate {
  /** Resolves with a slot when every limit of the call has room; waits (polling the store, woken
   *  at once by local releases) otherwise. `onWait` is called once if it has to wait. Rejects with
   *  the signal's reason when aborted (its waiter removed). */
  acquire(request: CallRequest, signal: AbortSignal, onWait?: (w: WaitingCall) => void): Promise<CallSlot>;
  /** The fleet as this gate last read it (at most `pollMs` old; its own writes at once). */
  view(): Promise<CapacityView>;
  /** Stops the heartbeat, leaves every waiter and releases every slot of this worker. */
  close(): Promise<void>;
}
export interface ModelCallGateOptions {
  ownerId: string;
  limits: CallLimits;
  leaseMs: number;
  clock?: Clock;
  random?: () => number;
  pollMs?: number;
  onStricter?: (message: string) => void;
  onBackoff?: (provider: string, untilMs: number, level: number) => void;
  /** A heartbeat or poll that failed (the store unreachable): retried at the next one. */
  onError?: (err: unknown) => void;
}

export const DEFAULT_CAPACITY_POLL_MS = 250;

interface Pending {
  id: string;
  request: CallRequest;
  since: number;
  granted: (grantedAt: number) => void;
  failed: (err: unknown) => void;
}

export async function openModelCallGate(store: CapacityStore, options: ModelCallGateOptions): Promise<ModelCallGate> {
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;
  const pollMs = options.pollMs ?? DEFAULT_CAPACITY_POLL_MS;
  const { ownerId, limits, leaseMs } = options;
  if (!(leaseMs > 0)) throw new RangeError(`leaseMs must be above 0 (got ${leaseMs})`);
  const pending = new Map<string, Pending>();
  const said = new Set<string>();
  let cache: { state: CapacityState; at: number } | undefined;
  let closed = false;
  let counter = 0;
  let heartbeatTimer: TimerHandle | undefined;
  let pollTimer: TimerHandle | undefined;

  const remember = (state: CapacityState) => {
    cache = { state, at: clock.now() };
    for (const entry of stricterElsewhere(state, clock.now(), ownerId)) {
      const message = describeStricter(entry);
      if (!said.has(message)) {
        said.add(message);
        options.onStricter?.(message);
      }
    }
    for (const p of [...pending.values()]) {
      const slot = state.slots.find((s) => s.id === p.id);
      if (slot) {
        pending.delete(p.id);
        p.granted(slot.since);
      }
    }
    schedulePoll();
  };

  /** Every write of this gate: the change, then what it means for local waiters. */
  const write = async <T>(change: (state: CapacityState, now: number) => CapacityState, result?: (state: CapacityState) => T): Promise<T | undefined> => {
    let after: CapacityState | undefined;
    const out = await store.update((state) => {
      const now = clock.now();
      after = change(state, now);
      return { state: after, result: result?.(after) };
    });
    if (after) remember(after);
    return out;
  };

  // a heartbeat still in flight when the gate closes must not bring the departed worker back
  const beat = (state: CapacityState, now: number) => (closed ? state : heartbeat(state, now, ownerId, limits, leaseMs));

  /** Re-enters local waiters the store lost (this worker's lease lapsed: a frozen process), then grants. */
  const poll = (state: CapacityState, now: number) => {
    if (closed) return state;
    let s = state.workers[ownerId] && state.workers[ownerId].expiresAt > now ? state : beat(state, now);
    for (const p of pending.values()) {
      if (!s.slots.some((x) => x.id === p.id) && !s.waiters.some((w) => w.id === p.id)) s = wait(s, now, { id: p.id, ownerId, ...p.request });
    }
    return grant(s, now);
  };

  function schedulePoll(): void {
    if (closed || pending.size === 0 || pollTimer !== undefined) return;
    pollTimer = clock.setTimeout(() => {
      pollTimer = undefined;
      if (closed || pending.size === 0) return;
      write(poll).catch((err) => {
        options.onError?.(err);
        schedulePoll();
      });
    }, pollMs);
  }

  const scheduleHeartbeat = () => {
    heartbeatTimer = clock.setTimeout(
      () => {
        if (closed) return;
        write(beat)
          .catch((err) => options.onError?.(err))
          .finally(() => {
            if (!closed) scheduleHeartbeat();
          });
      },
      Math.max(1, Math.floor(leaseMs / 3)),
    );
  };

  await write(beat);
  scheduleHeartbeat();

  /** The fleet's state, at most `pollMs` old. */
  const recent = async (): Promise<CapacityState> => {
    if (cache && clock.now() - cache.at < pollMs) return cache.state;
    const state = await store.read();
    cache = { state, at: clock.now() };
    return state;
  };

  const slotOf = (id: string, request: CallRequest, grantedAt: number): CallSlot => {
    let released = false;
    let wasThrottled = false;
    return {
      release: async () => {
        if (released || closed) return;
        released = true;
        await write((st, now) => {
          const s = release(st, now, id);
          return wasThrottled ? s : succeeded(s, now, request.provider, grantedAt);
        });
      },
      throttled: async (retryAfterMs) => {
        wasThrottled = true;
        const b = await write(
          (st, now) => throttled(st, now, request.provider, retryAfterMs, random()),
          (st) => st.backoff[request.provider],
        );
        if (b) options.onBackoff?.(request.provider, b.until, b.level);
      },
    };
  };

  /** A call no limit applies to, its provider not backing off: nothing stored, unless it meets a 429. */
  const freeSlot = (request: CallRequest): CallSlot => ({
    release: async () => {},
    throttled: async (retryAfterMs) => {
      const b = await write(
        (st, now) => throttled(st, now, request.provider, retryAfterMs, random()),
        (st) => st.backoff[request.provider],
      );
      if (b) options.onBackoff?.(request.provider, b.until, b.level);
    },
  });

  return {
    async acquire(request, signal, onWait) {
      if (closed) throw new ShutdownError();
      signal.throwIfAborted();
      const known = await recent();
      const now = clock.now();
      const scopes = scopesOf(fleetLimits(known, now), request).map((s) => s.scope);
      if (scopes.length === 0 && known.backoff[request.provider] === undefined) return freeSlot(request);
      const id = `${ownerId}.${++counter}`;
      signal.throwIfAborted();
      return new Promise<CallSlot>((resolve, reject) => {
        let settled = false;
        const onAbort = () => {
          if (settled) return;
          settled = true;
          pending.delete(id);
          write((st, t) => (st.slots.some((s) => s.id === id) ? release(st, t, id) : leave(st, t, id)))
            .catch((err) => options.onError?.(err))
            .finally(() => reject(signal.reason));
        };
        const p: Pending = {
          id,
          request,
          since: now,
          granted: (grantedAt) => {
            if (settled) return;
            settled = true;
            signal.removeEventListener('abort', onAbort);
            resolve(slotOf(id, request, grantedAt));
          },
          failed: (err) => {
            if (settled) return;
            settled = true;
            signal.removeEventListener('abort', onAbort);
            reject(err);
          },
        };
        pending.set(id, p);
        signal.addEventListener('abort', onAbort, { once: true });
        write(
          // an abort before this write lands already left: nothing to add then
          (st, t) => (pending.has(id) ? wait(st, t, { id, ownerId, ...request }) : st),
          (st) => st.waiters.find((w) => w.id === id),
        ).then(
          (waiter) => {
            if (waiter && !settled && pending.has(id))
              onWait?.({ sessionId: request.sessionId, executionId: request.executionId, tenant: request.tenant, scopes: waiter.scopes, since: waiter.since });
          },
          (err) => {
            pending.delete(id);
            p.failed(err);
          },
        );
      });
    },
    // the fleet's state as this gate last saw it (at most `pollMs` old): status asks on every call
    view: async () => capacityView(await recent(), clock.now()),
    async close() {
      if (closed) return;
      closed = true;
      clock.clearTimeout(heartbeatTimer);
      clock.clearTimeout(pollTimer);
      const stopping = new ShutdownError();
      for (const p of pending.values()) p.failed(stopping);
      pending.clear();
      await store.update((st) => ({ state: depart(st, clock.now(), ownerId), result: undefined }));
    },
  };
}

/** `readCapacity(store, now)`: the view without a gate (for `sessiond limits`). */
export async function readCapacity(store: CapacityStore, now: number): Promise<CapacityView> {
  return capacityView(await store.read(), now);
}

/** The view of a state (pure): each limit in force with what runs and waits under it, the waiting calls, back-offs, live workers. */
export function capacityView(stored: CapacityState, now: number): CapacityView {
  const state = withoutExpired(stored, now);
  const limits = fleetLimits(state, now);
  const scopes = new Set<string>();
  for (const part of LIMIT_PARTS) for (const name of Object.keys(limits[part] ?? {})) if (name !== EACH) scopes.add(scopeName(part, name));
  for (const x of [...state.slots, ...state.waiters]) for (const k of keysOf(x)) if (scopeLimit(state, limits, k) !== undefined) scopes.add(k);
  const count = (list: readonly { provider: string; model: string; tenant: string | null }[], scope: string) =>
    list.filter((x) => keysOf(x).includes(scope)).length;
  return {
    limits: [...scopes].sort().map((scope) => ({
      scope,
      limit: scopeLimit(state, limits, scope)!,
      inFlight: count(state.slots, scope),
      waiting: count(state.waiters, scope),
    })),
    waiting: [...state.waiters]
      .sort((a, b) => a.since - b.since)
      .map((w) => ({ sessionId: w.sessionId, executionId: w.executionId, tenant: w.tenant, scopes: w.scopes, since: w.since })),
    backoff: Object.entries(state.backoff).map(([provider, b]) => ({ provider, until: b.until, level: b.level })),
    workers: Object.entries(state.workers).map(([id, w]) => ({ ownerId: id, expiresAt: w.expiresAt })),
  };
}
