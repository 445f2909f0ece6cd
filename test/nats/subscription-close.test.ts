/**
 * A JetStream subscription closed while it is behind the stream closes, and delivers nothing after.
 * Its loop ends the consumer's iterator when it leaves (ReadyRuns.end, as leaving a `for await`
 * would): nats.js finishes closing consumer messages only once their iterator is done, and a NATS
 * worker whose subscription had left it suspended hung in its close ("still closing the worker, at
 * the log subscription"). This scenario passed before that change too (the hang needs the loop to
 * leave with items the iterator still holds; test/nats/ready-runs.test.ts holds that case).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { draft, ev } from '../../src/testing/fixtures.ts';
import { startNatsServer, WORKER, type NatsServer } from '../../src/testing/nats-server.ts';

let server: NatsServer;
let log: JetStreamEventLog;

test.before(async () => {
  server = await startNatsServer();
  log = await JetStreamEventLog.open({ connection: { servers: server.url, ...WORKER, reconnectWaitMs: 100 } });
  // a backlog: 2,000 appends of one event, 40 sessions
  for (let i = 0; i < 2_000; i += 40) {
    await Promise.all(
      Array.from({ length: 40 }, (_, s) => log.append(`ses_backlog${s}`, i / 40, [draft(ev('input.admitted', { inputId: `inp_${i + s}`, prompt: 'p' }))])),
    );
  }
});

test.after(async () => {
  await log?.close();
  await server?.stop();
});

/** `p`, or a failure naming `what` after `ms`. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

test('subscription close - closed during a batch, with more than a run of the backlog received, it closes and delivers nothing after', async () => {
  for (let round = 0; round < 5; round++) {
    let closing: Promise<void> | undefined;
    let batches = 0;
    let after = 0;
    const sub = log.subscribe({
      onBatch: async (events) => {
        batches++;
        if (closing) after += events.length;
        // the first batch is slow: the consumer meanwhile receives more than one run of the rest
        else if (batches === 1) await new Promise((r) => setTimeout(r, 300));
        else closing = sub.close(); // not awaited here: close waits for this batch to end
      },
    });
    await within(
      (async () => {
        while (!closing) await new Promise((r) => setTimeout(r, 5));
        await closing;
      })(),
      10_000,
      `round ${round}: the subscription's close`,
    );
    assert.is(batches, 2, 'no batch after the close');
    assert.is(after, 0);
    assert.ok(sub.position > 0 && sub.position < 2_000, `closed inside the backlog, at ${sub.position}`);
  }
});

test('subscription close - closed at once, while its consumer is being made: the close finishes', async () => {
  for (let round = 0; round < 5; round++) {
    const sub = log.subscribe({ after: 1_990 + round, onBatch: () => {} });
    await within(sub.close(), 10_000, `round ${round}: the close of a subscription closed as it started`);
  }
});

test.run();
