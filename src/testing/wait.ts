/**
 * Waiting without bare sleeps: poll a condition until it holds or a deadline passes, then fail with
 * a message naming what was awaited.
 */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  const interval = options.intervalMs ?? 10;
  for (;;) {
    if (await condition()) return;
    if (Date.now() > deadline) throw new Error(`Timed out after ${options.timeoutMs ?? 10_000} ms waiting for ${options.what ?? 'a condition'}`);
    await new Promise((r) => setTimeout(r, interval));
  }
}
