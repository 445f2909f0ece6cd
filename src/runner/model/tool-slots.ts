/**
 * A bound on how many tool calls of a turn run at once. A batch's calls are all journaled first
 * (one append); each then takes a slot before its tool runs. A slot waited for ends with the turn's
 * signal (cancel, a lost claim).
 */
export interface ToolSlots {
  /** Runs `fn` once a slot is free; rejects with the signal's reason when it aborts first. */
  run<T>(signal: AbortSignal, fn: () => Promise<T>): Promise<T>;
}

export function toolSlots(limit: number): ToolSlots {
  let running = 0;
  const waiting: (() => void)[] = [];
  const release = () => {
    running--;
    waiting.shift()?.();
  };
  const acquire = (signal: AbortSignal): Promise<void> => {
    signal.throwIfAborted();
    if (running < limit) {
      running++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const take = () => {
        signal.removeEventListener('abort', onAbort);
        running++;
        resolve();
      };
      const onAbort = () => {
        const i = waiting.indexOf(take);
        if (i >= 0) waiting.splice(i, 1);
        reject(signal.reason);
      };
      waiting.push(take);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  };
  return {
    async run(signal, fn) {
      await acquire(signal);
      try {
        return await fn();
      } finally {
        release();
      }
    },
  };
}
