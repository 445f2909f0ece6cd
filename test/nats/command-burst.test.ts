// A burst of commands from one client against two real `sessiond start --nats` workers (the
// finding: 1,202 of 4,000 requests from one Go client ended as "no responders"). Each worker held
// three places in the queue group, renewed only after it read a request, so a burst emptied the
// group and the server answered "no responders" faster than the client's retries could land. Now
// a worker holds a place per request in flight and answers past its limit `unavailable` (busy):
// every request is answered by a worker, a refusal at worst.
import { cliSuite, natsWorker } from './cli-suite.ts';
import * as assert from 'uvu/assert';
import { SessiondClient } from '../../src/client/client.ts';
import { CLIENT } from '../../src/testing/nats-server.ts';

const s = cliSuite('a burst of commands');

s('command burst - 3,000 concurrent admits from one client, two workers: none ends as no_worker, each answered by a worker', async (ctx) => {
  await natsWorker(ctx, 'w1.db', 1);
  await natsWorker(ctx, 'w2.db', 1);
  const client = await SessiondClient.connect({ connection: { servers: ctx.server.url, ...CLIENT } });
  try {
    const outcomes = await Promise.all(
      Array.from({ length: 3000 }, (_, i) =>
        client.admit(`ses_burst_${i % 50}`, { id: `inp_b${i}`, prompt: 'x', delivery: 'steer', wake: false }).then(
          () => 'ok',
          (err: { failure?: string; code?: string; message?: string }) => err.failure ?? err.code ?? String(err),
        ),
      ),
    );
    const counts: Record<string, number> = {};
    for (const o of outcomes) counts[o] = (counts[o] ?? 0) + 1;
    assert.is(counts.no_worker, undefined, `no request ended as "no responders": ${JSON.stringify(counts)}`);
    assert.ok(
      Object.keys(counts).every((c) => c === 'ok' || c === 'unavailable'),
      `admitted, or refused busy: ${JSON.stringify(counts)}`,
    );
    assert.ok((counts.ok ?? 0) > 0, JSON.stringify(counts));
  } finally {
    await client.close();
  }
});

s.run();
