/**
 * Tool progress at a bounded rate: at most one update per `intervalMs` per call goes out; one that
 * comes sooner waits for the interval's end, replaced by any later one (the latest wins). Nothing
 * is sent after `stop()` (the call ended); `stop(true)` first sends the one still waiting.
 */
import type { Clock } from '../clock.ts';

export const PROGRESS_INTERVAL_MS = 100;

export interface ProgressThrottle<T> {
  push(update: T): void;
  stop(sendWaiting?: boolean): void;
}

export function progressThrottle<T>(clock: Clock, send: (update: T) => void, intervalMs = PROGRESS_INTERVAL_MS): ProgressThrottle<T> {
  let lastSent = Number.NEGATIVE_INFINITY;
  let pending: { update: T } | undefined;
  let timer: ReturnType<Clock['setTimeout']> | undefined;
  let stopped = false;
  const flush = () => {
    timer = undefined;
    if (stopped || !pending) return;
    const { update } = pending;
    pending = undefined;
    lastSent = clock.now();
    send(update);
  };
  return {
    push(update) {
      if (stopped) return;
      pending = { update };
      const wait = lastSent + intervalMs - clock.now();
      if (wait <= 0 && timer === undefined) flush();
      else timer ??= clock.setTimeout(flush, Math.max(0, wait));
    },
    stop(sendWaiting = false) {
      if (sendWaiting && pending) flush();
      stopped = true;
      pending = undefined;
      if (timer !== undefined) clock.clearTimeout(timer);
      timer = undefined;
    },
  };
}
