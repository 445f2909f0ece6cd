/**
 * The fault suite's runner (`sessiond start --runner chaos/waiting-runner.ts`): the echo runner's
 * work (one recorded text per word, `ECHO_DELAY_MS` apart) plus the waits. A turn whose prompts
 * say `nap` first sleeps durably (300 ms: a timer the sweep ends); one that says `ask` asks a
 * person about a durable call `act` and settles waiting (the driver approves or denies it); the
 * resumed turn runs an approved call once (`runApproved`), a denied one never.
 */
import type { Runner } from '../src/index.ts';

const delayMs = Number(process.env.CHAOS_ECHO_DELAY_MS ?? 120);
export const NAP_MS = 300;

const runner: Runner = async (ctx) => {
  const resumed = ctx.inputs[0]?.continues?.reason === 'resumed';
  const words = ctx.inputs.flatMap((i) => i.prompt.split(/\s+/)).filter(Boolean);
  if (!resumed && words.includes('nap')) await ctx.sleep(NAP_MS);
  const { messageId } = await ctx.startStep();
  if (!resumed && words.includes('ask')) {
    await ctx.requestApproval(messageId, { name: 'act', input: { words: words.length }, durable: true });
    await ctx.endStep(messageId, 'tool-calls');
    return;
  }
  for (const w of ctx.waits)
    if (w.kind === 'approval' && w.outcome === 'approved' && !w.started && w.callId) await ctx.runApproved(w.callId, async () => 'acted');
  for (const word of words) {
    await new Promise<void>((resolve, reject) => {
      if (ctx.signal.aborted) return reject(ctx.signal.reason);
      const stop = () => {
        clearTimeout(t);
        reject(ctx.signal.reason);
      };
      const t = setTimeout(() => {
        ctx.signal.removeEventListener('abort', stop);
        resolve();
      }, delayMs);
      ctx.signal.addEventListener('abort', stop, { once: true });
    });
    await ctx.text(messageId, word);
  }
  await ctx.endStep(messageId, 'stop');
};
export default runner;
