// The wait between attempts of a JetStream request: requests refused together (a full stream queue
// answers hundreds of appends with 429 at once) must not all come back at the same moment.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BACKOFF_MS, retryWaitMs } from '../../src/nats/jetstream-log-base.ts';

test('retry wait - grows per attempt, from half of each backoff step to the whole step', () => {
  for (const [attempt, step] of BACKOFF_MS.entries()) {
    assert.is(
      retryWaitMs(attempt, () => 0),
      step / 2,
    );
    assert.is(
      retryWaitMs(attempt, () => 0.999999),
      step,
    );
  }
  assert.is(
    retryWaitMs(50, () => 0),
    BACKOFF_MS.at(-1)! / 2,
    'the last step stays the ceiling',
  );
});

test('retry wait - 300 requests refused at once come back spread over the step, not together', () => {
  for (const attempt of [0, 3, 5]) {
    const waits = Array.from({ length: 300 }, () => retryWaitMs(attempt));
    const step = BACKOFF_MS[attempt]!;
    assert.ok(
      waits.every((w) => w >= step / 2 && w <= step),
      `each within [${step / 2}, ${step}]`,
    );
    // 300 draws over step / 2 + 1 whole milliseconds (at least 26): far more than a third distinct
    assert.ok(new Set(waits).size > Math.min(300, step / 2) / 3, `${new Set(waits).size} distinct waits of 300`);
  }
});

test.run();
