// Large appends on the JetStream log (a message is at most the server's max_payload, 1 MiB): a tool
// result over the event limit (3 MiB here) is stored in the blob bucket and its call succeeds; without
// a blob store it fails its call with what to do and the turn settles; many medium results are
// appended in several messages as the buffer grows, never in one that the server would refuse.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Runner } from '../../src/runner/types.ts';
import { natsWorld, type NatsWorld } from './helpers.ts';

const s = suite<{ world: NatsWorld }>('large appends on NATS');
s.before(async (ctx) => {
  ctx.world = await natsWorld();
});
s.after.each(async (ctx) => {
  await ctx.world.reset();
});
s.after(async (ctx) => {
  await ctx.world.dispose();
});

const fetchAll =
  (errors: string[]): Runner =>
  async (ctx) => {
    const { messageId } = await ctx.startStep();
    await ctx
      .tool(messageId, { name: 'fetch_report', input: {} }, async () => 'r'.repeat(3 * 1024 * 1024))
      .catch((err: Error) => {
        errors.push(err.message);
      });
    for (let i = 0; i < 12; i++) await ctx.tool(messageId, { name: 'page', input: { i } }, async () => 'p'.repeat(200 * 1024));
    await ctx.endStep(messageId);
  };

s('a 3 MiB tool result is stored in the blob bucket; 12 results of 200 KiB land in several messages; the turn settles', async ({ world }) => {
  const errors: string[] = [];
  const { engine, log } = await world.engine({ runner: fetchAll(errors) });
  await engine.admit('ses_large', { prompt: 'fetch it all' });
  await engine.awaitIdle('ses_large');
  assert.is((await engine.status('ses_large')).outcome, 'succeeded');
  assert.equal(errors, []);
  const events = await log.readSession('ses_large');
  const succeeded = events.flatMap((e) => (e.type === 'tool.succeeded' ? [e] : []));
  assert.is(succeeded.length, 13);
  const stored = succeeded[0]!.payload.outputBlob;
  assert.ok(stored, 'the first result is a reference to a blob');
  assert.is(stored.size, 3 * 1024 * 1024 + 2, 'the JSON string of 3 MiB');
  assert.ok(await engine.blobs!.has(stored.sha256));
  const messages = new Set(succeeded.slice(1).map((e) => e.position));
  assert.ok(messages.size >= 3, `the results were appended in ${messages.size} messages`);
});

s('without a blob store a 3 MiB tool result fails its call with the limit and what to do; the turn settles', async ({ world }) => {
  const errors: string[] = [];
  const { engine, log } = await world.engine({ runner: fetchAll(errors), liveCommits: false });
  assert.is(engine.blobs, undefined);
  await engine.admit('ses_bare', { prompt: 'fetch it all' });
  await engine.awaitIdle('ses_bare');
  assert.is((await engine.status('ses_bare')).outcome, 'succeeded');
  assert.match(errors[0] ?? '', 'over the limit of 524288 bytes for one recorded result');
  const events = await log.readSession('ses_bare');
  assert.is(events.filter((e) => e.type === 'tool.succeeded').length, 12);
  assert.ok(events.some((e) => e.type === 'tool.failed'));
});

s.run();
