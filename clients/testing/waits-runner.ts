/**
 * The runner of the waits tests' worker (clients/go/waits_test.go and clients/python/tests/test_waits.py start `sessiond start --runner` with it):
 * an echo of the prompt, except
 *
 *   wait for NAME     waits for the signal NAME (the resolve command), then answers
 *                     `got NAME: <its value as JSON>`;
 *   ask to run TOOL   asks a person about a call of TOOL (approve or deny), then answers
 *                     `ran TOOL` (approved: the call runs, once) or `denied TOOL: <the reason>`.
 *
 * A turn that waited resumes in a new execution that runs this again from the top, its waits (with
 * their outcomes) in `ctx.waits`: what the turn does next is read from them.
 */
import type { RunContext, Runner } from '../../src/index.ts';

async function answer(ctx: RunContext, text: string): Promise<void> {
  const { messageId } = await ctx.startStep();
  await ctx.text(messageId, text);
  await ctx.endStep(messageId, 'stop');
}

const runner: Runner = async (ctx) => {
  const signal = ctx.waits.find((w) => w.kind === 'signal');
  const approval = ctx.waits.find((w) => w.kind === 'approval');
  const prompt = ctx.inputs[0]?.prompt ?? '';
  const [, verb, name] = /^(wait for|ask to run) (\S+)$/.exec(prompt) ?? [];
  if (signal || verb === 'wait for') {
    const key = signal?.name ?? name!;
    const got = await ctx.waitFor(key); // the first time: the execution ends here, waiting
    await answer(ctx, got.outcome === 'delivered' ? `got ${key}: ${JSON.stringify(got.data) ?? 'nothing'}` : `no ${key} in time`);
  } else if (approval) {
    if (approval.outcome === 'approved') {
      const ran = await ctx.runApproved(approval.callId!, async ({ callId }) => ({ tool: approval.tool, callId }));
      await answer(ctx, `ran ${ran.tool}`);
    } else {
      await answer(ctx, `${approval.outcome} ${approval.tool}: ${approval.reason ?? 'no reason given'}`);
    }
  } else if (verb === 'ask to run') {
    const { messageId } = await ctx.startStep();
    await ctx.requestApproval(messageId, { name: name!, input: { asked: prompt } });
    await ctx.endStep(messageId, 'tool-calls'); // the turn settles waiting: approve or deny resumes it
  } else {
    await answer(ctx, `echo: ${prompt}`);
  }
};

export default runner;
