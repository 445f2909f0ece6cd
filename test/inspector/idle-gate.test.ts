// The idle gate of the index a worker keeps: batches go while the rest of the process leaves the
// loop idle, one a second at least while it is busy, and at once when the gate closes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock } from '../../src/clock.ts';
import { IdleGate } from '../../src/inspector/idle-gate.ts';

/** A gate over a loop busy for `share` of the time the clock moves. */
function gate(share: { value: number }) {
  const clock = new ManualClock(1_000);
  let busy = 0;
  let last = clock.now();
  const loopBusy = () => {
    busy += (clock.now() - last) * share.value;
    last = clock.now();
    return busy;
  };
  return { clock, gate: new IdleGate({ clock, loopBusy }) };
}

/** Whether `p` settled once the clock moved `ms`. */
async function settledAfter(clock: ManualClock, p: Promise<void>, ms: number): Promise<boolean> {
  let done = false;
  void p.then(() => {
    done = true;
  });
  await clock.advance(ms);
  return done;
}

test('idle gate - an idle loop lets the batch go after one sample, and the next ones at once while the sample holds', async () => {
  const { clock, gate: g } = gate({ value: 0.1 });
  assert.ok(await settledAfter(clock, g.turn(), 20), 'one sample of 20 ms found the loop idle');
  assert.ok(await settledAfter(clock, g.turn(), 0), 'the next batch goes at once');
  await clock.advance(100);
  assert.not.ok(await settledAfter(clock, g.turn(), 0), 'the sample is taken again after 100 ms');
});

test('idle gate - a busy loop holds the follow, one batch a second, and lets it go when the load falls', async () => {
  const share = { value: 0.9 };
  const { clock, gate: g } = gate(share);
  const held = g.turn();
  assert.not.ok(await settledAfter(clock, held, 500), 'held while the rest of the process keeps the loop busy');
  assert.ok(await settledAfter(clock, held, 520), 'but one batch a second goes');
  const next = g.turn();
  assert.not.ok(await settledAfter(clock, next, 200));
  share.value = 0.2;
  assert.ok(await settledAfter(clock, next, 40), 'the load fell: it goes after a sample');
});

test('idle gate - under load a long batch spaces the next out, so the follow takes 2 % of the loop', async () => {
  const { clock, gate: g } = gate({ value: 0.9 });
  const first = g.turn();
  assert.ok(await settledAfter(clock, first, 1_000), 'the first batch after a second');
  await clock.advance(100); // the batch took 100 ms
  const next = g.turn();
  assert.not.ok(await settledAfter(clock, next, 3_000), 'not a second later');
  assert.ok(await settledAfter(clock, next, 1_920), 'but 5 s after the last went (100 ms is 2 % of it)');
});

test('idle gate - closing lets every turn go at once', async () => {
  const { clock, gate: g } = gate({ value: 1 });
  const waiting = g.turn();
  assert.not.ok(await settledAfter(clock, waiting, 100));
  g.close();
  assert.ok(await settledAfter(clock, waiting, 0), 'the waiting one');
  assert.ok(await settledAfter(clock, g.turn(), 0), 'and a later one');
});

test.run();
