// What the budget tests share: a runner of model steps that report usage, and what its turns left in the log.
import type { SessionEvent } from '../../src/events/envelope.ts';
import type { Usage } from '../../src/events/catalog.ts';
import type { Runner } from '../../src/runner/types.ts';

export const settled = (events: SessionEvent[]) => events.filter((e): e is SessionEvent<'execution.settled'> => e.type === 'execution.settled');
export const steps = (events: SessionEvent[]) => events.filter((e) => e.type === 'step.started').length;

/** A runner of `n` model steps on model `m-1`, each reporting `usage`. */
export const stepsRunner =
  (n: number, usage: Usage): Runner =>
  async (ctx) => {
    for (let i = 0; i < n; i++) {
      const { messageId } = await ctx.startStep();
      await ctx.phase('unknown');
      await ctx.endStep(messageId, 'stop', usage, 'm-1');
    }
  };
