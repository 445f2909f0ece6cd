/**
 * Waiting without bare sleeps: poll a condition until it holds or a deadline passes, then fail with
 * a message naming what was awaited.
 */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const deadline = Date.now() + timeoutMs;
  const interval = options.intervalMs ?? 10;
  const what = options.what ?? 'a condition';
  for (;;) {
    if (await answerBy(condition, deadline, () => new Error(`Timed out after ${timeoutMs} ms waiting for ${what} (its last check never answered)`))) return;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, interval));
  }
}

/** The condition's answer, or `late()` thrown once the deadline passes first (a check that hangs, e.g. a request with no timeout). */
async function answerBy(condition: () => boolean | Promise<boolean>, deadline: number, late: () => Error): Promise<boolean> {
  const answer = condition();
  if (typeof answer === 'boolean') return answer;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), Math.max(0, deadline - Date.now()) + 1);
  });
  try {
    return await Promise.race([answer, expired]);
  } finally {
    clearTimeout(timer);
  }
}
