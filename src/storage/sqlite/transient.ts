/**
 * Storage errors that pass on their own: SQLite's busy and locked results (another connection,
 * often another process, holds the write lock longer than the busy timeout). The write did not
 * happen, so deciding again and writing again is safe; callers retry these with backoff and treat
 * anything else as a real failure.
 */
import { sleep, type Clock } from '../../clock.ts';

const TRANSIENT_SQLITE = /^SQLITE_(BUSY|LOCKED)(_|$)/;

export function isTransientStorageError(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && TRANSIENT_SQLITE.test(code)) return true;
  }
  return false;
}

/** Waits between attempts: 25 ms doubling, at most `maxMs`. */
export function backoffMs(attempt: number, maxMs = 2_000): number {
  return Math.min(maxMs, 25 * 2 ** Math.min(attempt, 16));
}

export interface TransientRetry {
  clock: Clock;
  /** Give up (rethrow) once retrying has taken this long. */
  forMs: number;
}

/** Runs `fn`, again after a backoff while it fails with a transient storage error, for at most `forMs`. */
export async function retryTransient<T>(fn: () => T | Promise<T>, o: TransientRetry): Promise<T> {
  const deadline = o.clock.now() + o.forMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!isTransientStorageError(err) || o.clock.now() >= deadline) throw err;
      await sleep(o.clock, backoffMs(attempt));
    }
  }
}
