/**
 * waitFor (sessiond/testing): polls until the condition holds, else fails naming what it waited
 * for; a check that never answers (a request with no timeout) fails at the deadline too, instead of
 * hanging the test.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { waitFor } from '../../src/testing/wait.ts';

/** Settles with the outcome of `p`, or 'hung' when `p` has not settled after `ms`. */
function within<T>(p: Promise<T>, ms: number): Promise<T | 'hung'> {
  return Promise.race([p, new Promise<'hung'>((r) => setTimeout(() => r('hung'), ms).unref())]);
}

test('waitFor - a condition that comes true ends the wait', async () => {
  let n = 0;
  await waitFor(() => ++n >= 3, { intervalMs: 1 });
  assert.is(n, 3);
});

test('waitFor - a condition that stays false fails at the deadline, naming what was awaited', async () => {
  const err = await waitFor(async () => false, { timeoutMs: 50, what: 'the moon' }).catch((e: unknown) => e);
  assert.instance(err, Error);
  assert.match((err as Error).message, 'Timed out after 50 ms waiting for the moon');
});

test('waitFor - a check that never answers fails at the deadline too', async () => {
  const hanging = waitFor(() => new Promise<boolean>(() => {}), { timeoutMs: 100, what: 'a server that never answers' }).catch((e: unknown) => e);
  const outcome = await within(hanging, 2_000);
  assert.ok(outcome !== 'hung', 'waitFor returned');
  assert.instance(outcome, Error);
  assert.match((outcome as Error).message, 'Timed out after 100 ms waiting for a server that never answers (its last check never answered)');
});

test.run();
