/** Small measuring helpers: rates, percentiles, memory. */

export function perSecond(count: number, ms: number): number {
  return ms > 0 ? (count * 1000) / ms : 0;
}

/** The p-th percentile (0..100) of samples, nearest-rank. */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export const MB = 1024 * 1024;

export function rssMb(): number {
  return process.memoryUsage.rss() / MB;
}

/** Runs a full gc a few times when node was started with --expose-gc; returns whether it could. */
export function fullGc(): boolean {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return false;
  for (let i = 0; i < 3; i++) gc();
  return true;
}

/** Lets timers and I/O callbacks run (and the heap settle) between phases. */
export function settle(ms = 50): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export interface Passes {
  /** Best rate of all passes (least disturbed by other work on the machine). */
  best: number;
  rates: number[];
}

/**
 * Runs `pass` several times (a full gc before each, when exposed) and keeps the best rate: on a
 * shared machine the fastest pass is the one least disturbed. `pass(i)` returns count and ms.
 */
export async function bestOf(passes: number, pass: (i: number) => Promise<{ count: number; ms: number }> | { count: number; ms: number }): Promise<Passes> {
  const rates: number[] = [];
  for (let i = 0; i < passes; i++) {
    fullGc();
    const { count, ms } = await pass(i);
    rates.push(perSecond(count, ms));
  }
  return { best: Math.max(...rates), rates };
}

export function spread(p: Passes): string {
  return `best of ${p.rates.length} passes [${p.rates.map((r) => Math.round(r).toLocaleString('en-US')).join(', ')}]`;
}

/**
 * Runs several measurements in alternation (a pass of each, then again), so a raw ceiling and the
 * figure compared with it see the same conditions on a shared machine; the best pass of each is kept.
 */
export async function interleaved(
  passes: number,
  fns: ((i: number) => Promise<{ count: number; ms: number }> | { count: number; ms: number })[],
): Promise<Passes[]> {
  const rates: number[][] = fns.map(() => []);
  for (let i = 0; i < passes; i++) {
    for (const [j, fn] of fns.entries()) {
      fullGc();
      const { count, ms } = await fn(i);
      rates[j]!.push(perSecond(count, ms));
    }
  }
  return rates.map((r) => ({ best: Math.max(...r), rates: r }));
}
