/**
 * Time, injected: wall-clock milliseconds and timers. Nothing in sessiond calls `Date.now()` or
 * `setTimeout` directly; tests use `ManualClock` and move time by hand.
 */
export type TimerHandle = { readonly id: number } | NodeJS.Timeout;

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle | undefined): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    return t;
  },
  clearTimeout: (h) => {
    if (h !== undefined) clearTimeout(h as NodeJS.Timeout);
  },
};

/** Resolves after `ms` on the given clock. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const h = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clock.clearTimeout(h);
      resolve();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** A clock that only moves when told to; its timers fire in time order as it moves. */
export class ManualClock implements Clock {
  private current: number;
  private nextId = 1;
  private timers = new Map<number, { at: number; fn: () => void }>();

  constructor(start = 0) {
    this.current = start;
  }
  now(): number {
    return this.current;
  }
  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.timers.set(id, { at: this.current + Math.max(0, ms), fn });
    return { id };
  }
  clearTimeout(handle: TimerHandle | undefined): void {
    if (handle && typeof (handle as { id?: unknown }).id === 'number') this.timers.delete((handle as { id: number }).id);
  }
  /** Jumps to `ms` without firing timers (as a frozen process sees time when it wakes up). */
  set(ms: number): void {
    this.current = ms;
  }
  /** Pending timers (for assertions). */
  get pendingTimers(): number {
    return this.timers.size;
  }
  /**
   * Moves time forward by `ms`, firing due timers in order and letting the promises they start
   * settle between firings (so an async heartbeat completes before the next timer fires).
   */
  async advance(ms: number): Promise<number> {
    const target = this.current + ms;
    for (;;) {
      await flushAsync();
      let due: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.timers) if (entry[1].at <= target && (!due || entry[1].at < due[1].at)) due = entry;
      if (!due) break;
      this.timers.delete(due[0]);
      this.current = Math.max(this.current, due[1].at);
      due[1].fn();
    }
    this.current = target;
    await flushAsync();
    return this.current;
  }
}

/** Lets pending promise callbacks and immediate I/O callbacks run. */
/** A time for messages people read: ISO 8601 in UTC (events keep the raw milliseconds); one no date can show, as its raw number. */
export function isoTime(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? `${String(ms)} ms since the epoch (past any date)` : date.toISOString();
}

/** The latest time a client may give (notBefore): the end of year 9999 UTC, far inside what `Date` represents (8.64e15 ms). */
export const LATEST_CLIENT_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

export async function flushAsync(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}
