/**
 * The built-in `echo` runner: streams the turn's prompt back in a few steps. Used by the demo, the
 * tests and the benchmarks. Each step starts an assistant step, marks the phase `unknown` (as
 * before a model request: a durability boundary), streams words as live deltas, records the text
 * and ends the step.
 */
import { sleep } from '../clock.ts';
import type { Runner } from './types.ts';

export interface EchoOptions {
  /** Number of steps the prompt is split over (default 3). */
  steps?: number;
  /** Pause per step, in ms (default 0), so a turn is long enough to watch or to kill. */
  delayMs?: number;
  /** Signal a context overflow before this step (0-based): a compaction runs, then the turn continues. */
  overflowAtStep?: number;
}

export const DEFAULT_ECHO_STEPS = 3;

export function echoRunner(options: EchoOptions = {}): Runner {
  const steps = Math.max(1, options.steps ?? DEFAULT_ECHO_STEPS);
  const delayMs = Math.max(0, options.delayMs ?? 0);
  return async (ctx) => {
    let prompt = ctx.inputs.map((i) => i.prompt).join('\n');
    for (let step = 0; step < steps; step++) {
      if (options.overflowAtStep === step) {
        await ctx.compact('context overflow', async () => `summary of ${prompt.length} characters`);
      }
      const { messageId, steered } = await ctx.startStep();
      await ctx.phase('unknown'); // the model request would go out now: the step start is durable first
      if (steered.length > 0) prompt = [prompt, ...steered.map((s) => s.prompt)].join('\n');
      const words = chunk(prompt, steps)[step] ?? '';
      const partId = `prt_${messageId}`;
      for (const word of words.split(/(?<=\s)/)) if (word) ctx.delta(messageId, partId, word);
      if (delayMs > 0) await sleep(ctx.clock, delayMs, ctx.signal);
      if (words) await ctx.text(messageId, `echo: ${words}`, partId); // a short prompt leaves later steps without text
      await ctx.endStep(messageId, step === steps - 1 ? 'stop' : 'continue');
    }
  };
}

/** Splits text into `n` nearly equal pieces on word boundaries where possible. */
function chunk(text: string, n: number): string[] {
  const words = text.split(/\s+/).filter(Boolean);
  if (words.length === 0) return Array.from({ length: n }, () => '');
  const at = (i: number) => Math.round((i * words.length) / n);
  return Array.from({ length: n }, (_, i) => words.slice(at(i), at(i + 1)).join(' '));
}
