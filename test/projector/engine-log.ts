/**
 * A realistic log for equivalence tests: a real embedded engine (manual clock, sequential ids) runs
 * turns on four sessions at once with a runner that writes several text parts (one rewritten),
 * durable and plain tool calls that succeed or fail, a compaction, a steering input and a failed
 * step. Returns every committed event, in log order.
 */
import { ManualClock } from '../../src/clock.ts';
import { openEngine, type Engine } from '../../src/engine.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { sequentialIds } from '../../src/ids.ts';
import type { Runner } from '../../src/runner/types.ts';
import { tempDir } from '../support/tmp.ts';

const SESSIONS = ['ses_a', 'ses_b', 'ses_c', 'ses_d'];

function busyRunner(engine: () => Engine): Runner {
  let turn = 0;
  return async (ctx) => {
    const n = turn++;
    for (let step = 0; step < 2; step++) {
      await ctx.phase('unknown');
      const { messageId } = await ctx.startStep();
      const part = await ctx.text(messageId, `draft ${n}.${step}`);
      await ctx.text(messageId, `final ${n}.${step}`, part);
      await ctx.text(messageId, `more ${n}.${step}`);
      await ctx.tool(messageId, { name: 'lookup', input: { q: n, big: 2 ** 40 }, durable: step === 0 }, async () => ({ rows: [n, step] }));
      await ctx
        .tool(messageId, { name: 'write', input: [n] }, async () => {
          throw Object.assign(new Error('disk full'), { name: 'IOError' });
        })
        .catch(() => undefined);
      if (n % 3 === 0 && step === 0) await ctx.compact('context overflow', async () => `summary ${n}`);
      if (n === 1 && step === 0) await engine().admit(ctx.sessionId, { prompt: 'also this', delivery: 'steer', wake: false });
      if (n === 2 && step === 1) {
        await ctx.failStep(messageId, { type: 'model', name: 'APIError', message: 'overloaded' });
        throw new Error('model overloaded');
      }
      await ctx.endStep(messageId, 'stop');
    }
  };
}

export async function engineLog(): Promise<SessionEvent[]> {
  const tmp = tempDir();
  let engine!: Engine;
  engine = await openEngine({ file: tmp.file('log.db'), runner: busyRunner(() => engine), clock: new ManualClock(1_000), ids: sequentialIds() });
  try {
    for (let round = 0; round < 2; round++) {
      await Promise.all(SESSIONS.map((s) => engine.admit(s, { prompt: `round ${round} for ${s}` })));
      await Promise.all(SESSIONS.map((s) => engine.awaitIdle(s)));
    }
    return await engine.log.readAll();
  } finally {
    await engine.close();
    tmp.remove();
  }
}
