import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock } from '../../src/clock.ts';
import { progressThrottle } from '../../src/execution/progress-throttle.ts';

test('progress throttle - the first update goes at once; those within 100 ms wait, the latest wins; nothing after stop', async () => {
  const clock = new ManualClock(1_000);
  const sent: number[] = [];
  const t = progressThrottle<number>(clock, (n) => sent.push(n));
  t.push(1);
  assert.equal(sent, [1]);
  t.push(2);
  t.push(3);
  await clock.advance(50);
  assert.equal(sent, [1], 'not before the interval ends');
  await clock.advance(50);
  assert.equal(sent, [1, 3], 'the latest of the interval');
  await clock.advance(500);
  t.push(4);
  assert.equal(sent, [1, 3, 4], 'a quiet call reports at once again');
  t.push(5);
  t.stop();
  await clock.advance(1_000);
  assert.equal(sent, [1, 3, 4], 'a call that ended sends nothing more');
});

test('progress throttle - stop(true) sends the report still waiting (a call that succeeded), then nothing', async () => {
  const clock = new ManualClock(1_000);
  const sent: number[] = [];
  const t = progressThrottle<number>(clock, (n) => sent.push(n));
  t.push(1);
  t.push(2);
  t.stop(true);
  await clock.advance(1_000);
  assert.equal(sent, [1, 2]);
});

test.run();
