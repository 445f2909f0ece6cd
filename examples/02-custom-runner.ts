// 02: a runner of your own: steps, streamed text, a durable tool call, and cancellation.
//   npx tsx examples/02-custom-runner.ts
import { openEngine, type Runner } from '../src/index.ts';

const runner: Runner = async (ctx) => {
  const prompt = ctx.inputs.map((i) => i.prompt).join('\n');
  const { messageId } = await ctx.startStep(); // steering inputs join here
  await ctx.phase('unknown'); // a model request may now be in flight
  ctx.delta(messageId, 'p1', 'thinking...'); // live only, never stored
  const weather = await ctx.tool(messageId, { name: 'weather', input: { city: 'Oslo' }, durable: true }, async ({ idempotencyKey, signal }) => ({
    city: 'Oslo',
    tempC: 3,
    idempotencyKey,
    aborted: signal.aborted,
  }));
  await ctx.text(messageId, `You said "${prompt}". It is ${weather.tempC} °C in ${weather.city}.`);
  await ctx.endStep(messageId);
};

const engine = await openEngine({ file: '.sessiond/example-runner.db', runner });
await engine.admit('ses_runner', { prompt: 'what should I wear?' });
await engine.awaitIdle('ses_runner');
for (const e of await engine.log.readSession('ses_runner')) console.log(e.seq, e.type);
await engine.close();
