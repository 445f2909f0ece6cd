/**
 * A runner module for `sessiond start --runner PATH` in tests of turns that wait: a prompt `deploy`
 * asks a person about a deploy (the approved call appends `SESSION IDEMPOTENCY_KEY` to `effects`);
 * `sleep` sleeps 1 s; `ask` waits for a signal `answer`. Each turn ends saying what its waits came to
 * (`done: approval call_ses_1 approved`).
 */
import { writeFileSync } from 'node:fs';

export function writeRunner(file: string, effects: string): void {
  writeFileSync(
    file,
    `import { appendFileSync } from 'node:fs';
export default async (ctx) => {
  const first = ctx.inputs[0];
  const resumed = first.continues?.reason === 'resumed';
  const { messageId } = await ctx.startStep();
  if (!resumed && first.prompt === 'sleep') await ctx.sleep(1000);
  if (!resumed && first.prompt === 'ask') await ctx.waitFor('answer');
  if (!resumed && first.prompt === 'deploy') {
    await ctx.requestApproval(messageId, { name: 'deploy', input: { to: 'prod' }, durable: true, callId: 'call_' + ctx.sessionId });
    await ctx.endStep(messageId, 'tool-calls');
    return;
  }
  for (const w of ctx.waits) {
    if (w.kind === 'approval' && w.outcome === 'approved' && !w.started)
      await ctx.runApproved(w.callId, async ({ idempotencyKey }) => {
        appendFileSync(${JSON.stringify(effects)}, ctx.sessionId + ' ' + idempotencyKey + '\\n');
        return 'deployed';
      });
  }
  const said = ctx.waits.map((w) => w.kind + ' ' + w.name + ' ' + w.outcome + (w.data === undefined ? '' : ' ' + JSON.stringify(w.data))).join(', ');
  await ctx.text(messageId, 'done: ' + (said || first.prompt));
  await ctx.endStep(messageId, 'stop');
};
`,
  );
}
