/**
 * Limits on model calls over NATS, real processes: two `sessiond start --nats` workers with
 * `--max-model-calls 2` share the limit through the deployment's JetStream bucket. Eight sessions at
 * once: the model server never sees more than 2 calls in flight and every turn finishes. A worker
 * SIGKILLed while its call holds the only slot: the slot goes with its lease and the other worker's
 * waiting call goes out. (On one SQLite file: test/cli/max-model-calls.test.ts.)
 */
import { as, cliSuite, natsWorker, type CliCtx } from './cli-suite.ts';
import * as assert from 'uvu/assert';
import { SessiondClient } from '../../src/client/client.ts';
import { ADMIN, CLIENT } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../src/testing/fake-openai.ts';
import { runCli, type LongRunning } from '../support/cli.ts';

/** Stops a test's workers (their calls would otherwise go on holding the shared limit in the next test). */
async function stopAll(workers: LongRunning[]): Promise<void> {
  for (const w of workers) {
    if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGTERM');
    await w.exited;
  }
}

const s = cliSuite('limits on model calls over NATS');

const openai = (llm: FakeOpenAI, extra: string[]) => ['--runner', 'openai', '--model', 'fake-model', '--base-url', llm.url, '--sweep-ms', '200', ...extra];

async function succeeded(client: SessiondClient, id: string): Promise<void> {
  await waitFor(async () => (await client.status(id)).outcome === 'succeeded', { what: `${id} succeeded`, timeoutMs: 60_000, intervalMs: 100 });
}

s('model call limits (NATS) - two workers with --max-model-calls 2, 8 sessions at once: never more than 2 in flight, all finish', async (ctx: CliCtx) => {
  // the calls that start before the test has seen the limit full take long (a CLI start-up under
  // load can outlast a fast turn); once it has, the rest are quick
  let seenFull = false;
  const llm = await startFakeOpenAI({ defaultReply: () => ({ kind: 'text', text: ['one ', 'two ', 'three'], delayMs: seenFull ? 60 : 2_000 }) });
  const client = await SessiondClient.connect({ connection: { servers: ctx.server.url, ...CLIENT } });
  let workers: LongRunning[] = [];
  try {
    workers = [
      await natsWorker(ctx, 'a.db', 0, openai(llm, ['--max-model-calls', '2'])),
      await natsWorker(ctx, 'b.db', 0, openai(llm, ['--max-model-calls', '2'])),
    ];
    const ids = Array.from({ length: 8 }, (_, i) => `ses_ncap${i}`);
    await Promise.all(ids.map((id) => client.admit(id, { prompt: 'go' })));
    let shown = '';
    await waitFor(
      async () => {
        shown = (await runCli(['limits', '--nats', ctx.server.url, ...as(ADMIN)])).stdout;
        return /model:fake-model\s+2 of 2 in flight, [1-9]\d* waiting/.test(shown);
      },
      { what: '`sessiond limits --nats` to show the limit full with calls waiting', timeoutMs: 20_000, intervalMs: 50 },
    ).catch((err: unknown) => assert.unreachable(`${String(err)}\nlast output:\n${shown}`));
    seenFull = true;
    for (const id of ids) await succeeded(client, id);
    assert.ok(llm.mostInFlight <= 2, `the server saw ${llm.mostInFlight} calls at once, over the limit of 2`);
    assert.is(llm.mostInFlight, 2, 'the limit was used');
    assert.ok(
      workers.some((w) => w.output().includes('a model call waits for room: model:fake-model')),
      `a worker said a call waits for room:\n${workers.map((w) => w.output()).join('\n')}`,
    );
  } finally {
    await stopAll(workers);
    await client.close();
    await llm.close();
  }
});

s('model call limits (NATS) - a worker SIGKILLed holding the only slot: its lease frees it and the other worker runs both turns', async (ctx: CliCtx) => {
  const llm = await startFakeOpenAI({ defaultReply: () => ({ kind: 'text', text: 'done', delayMs: 5 }) });
  llm.script({ kind: 'hang' });
  const client = await SessiondClient.connect({ connection: { servers: ctx.server.url, ...CLIENT } });
  const flags = openai(llm, ['--max-model-calls', '1', '--lease-ms', '1500', '--heartbeat-ms', '500']);
  const workers: LongRunning[] = [];
  try {
    const first = await natsWorker(ctx, 'c.db', 0, flags);
    workers.push(first);
    await client.admit('ses_nheld', { prompt: 'go' });
    await llm.waitForRequest(1, 20_000);
    const second = await natsWorker(ctx, 'd.db', 0, flags);
    workers.push(second);
    await client.admit('ses_nqueued', { prompt: 'go' });
    await waitFor(
      () => first.output().includes('ses_nqueued  a model call waits for room') || second.output().includes('ses_nqueued  a model call waits for room'),
      {
        what: 'the second call to wait',
        timeoutMs: 20_000,
      },
    );
    first.child.kill('SIGKILL');
    await first.exited;
    for (const id of ['ses_nqueued', 'ses_nheld']) await succeeded(client, id);
    assert.ok(llm.mostInFlight <= 1, `the server saw ${llm.mostInFlight} calls at once, over the limit of 1`);
  } finally {
    await stopAll(workers);
    await client.close();
    await llm.close();
  }
});

s.run();
