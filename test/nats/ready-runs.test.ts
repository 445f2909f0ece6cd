/**
 * ReadyRuns (src/nats/ready-runs.ts): runs of what an async iterator has ready, and `end()`, which
 * finishes the source as leaving a `for await` does. nats.js's consumer messages finish their close
 * only when their iterator is done; a subscription that left its source suspended on items it had
 * not taken kept a NATS worker's close waiting forever.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ReadyRuns } from '../../src/nats/ready-runs.ts';

/** A source of `n` items that are all ready at once; `closed` once it has finished (its `finally`). */
function source(n: number) {
  const state = { closed: false, taken: 0 };
  async function* items() {
    try {
      for (let i = 0; i < n; i++) {
        state.taken++;
        yield i;
      }
    } finally {
      state.closed = true;
    }
  }
  return { iterator: items(), state };
}

test('ready runs - items ready at once come in runs of at most max', async () => {
  const { iterator } = source(25);
  const runs = new ReadyRuns(iterator);
  assert.equal((await runs.next(10)).length, 10);
  assert.equal((await runs.next(10)).length, 10);
  assert.equal(await runs.next(10), [20, 21, 22, 23, 24]);
  assert.equal(await runs.next(10), []);
});

test('ready runs - end() finishes a source left holding items, as leaving a for-await does', async () => {
  const { iterator, state } = source(100);
  const runs = new ReadyRuns(iterator);
  assert.equal((await runs.next(10)).length, 10);
  assert.not.ok(state.closed, 'suspended on the items not taken');
  runs.end();
  await new Promise((r) => setImmediate(r));
  assert.ok(state.closed, 'the source finished');
  assert.ok(state.taken < 100, 'without being read to its end');
});

test('ready runs - end() while a next() of the source is pending finishes it once that item comes', async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  let closed = false;
  async function* slow() {
    try {
      yield 1;
      await gate;
      yield 2;
      yield 3;
    } finally {
      closed = true;
    }
  }
  const runs = new ReadyRuns(slow());
  assert.equal(await runs.next(10), [1]); // the wait for 2 lost the race to the next turn: it is pending
  runs.end();
  release();
  await new Promise((r) => setTimeout(r, 10));
  assert.ok(closed);
});

test.run();
