// The approval flow over NATS, with two real `sessiond start --nats` workers and the client: a turn
// asks a person about a deploy and settles waiting (no owner, no lease); the worker that ran it is
// SIGKILLed; the client approves through the `resolve` command, the other worker resumes the turn
// and runs the call once. A denial by the CLI as the client user (`sessiond deny --nats`) never runs.
import { as, cliSuite, natsWorker } from './cli-suite.ts';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { SessiondClient } from '../../src/client/client.ts';
import { CLIENT } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { runCli, type LongRunning } from '../support/cli.ts';
import { writeRunner } from '../support/wait-runner.ts';

const s = cliSuite('approvals over NATS');

s(
  'approvals (NATS) - the worker that ran a waiting turn is killed; the client approves; the other worker runs the call once; a denied call never runs',
  async (ctx) => {
    const url = ctx.server.url;
    const runner = ctx.tmp.file('approval-runner.mjs');
    const effects = ctx.tmp.file('effects.txt');
    writeFileSync(effects, '');
    writeRunner(runner, effects);
    const workers = [await natsWorker(ctx, 'a.db', 0, ['--runner', runner]), await natsWorker(ctx, 'b.db', 0, ['--runner', runner])];
    const client = await SessiondClient.connect({ connection: { servers: url, ...CLIENT } });
    const ranIt = (session: string): LongRunning => workers.find((w) => w.output().includes(`${session}  waits for approval`))!;
    try {
      for (const id of ['ses_nats_ok', 'ses_nats_no']) await client.admit(id, { prompt: 'deploy' });
      for (const id of ['ses_nats_ok', 'ses_nats_no'])
        await waitFor(async () => (await client.status(id)).outcome === 'waiting', { timeoutMs: 30_000, intervalMs: 100, what: `${id} waits` });
      const waiting = await client.status('ses_nats_ok');
      assert.is(waiting.owner, null, 'a waiting turn holds nothing');
      assert.equal(
        waiting.waits.map((w) => [w.kind, w.name, w.tool, w.input, w.outcome]),
        [['approval', 'call_ses_nats_ok', 'deploy', { to: 'prod' }, null]],
      );
      const victim = ranIt('ses_nats_ok');
      const survivor = workers.find((w) => w !== victim)!;
      victim.child.kill('SIGKILL');
      await victim.exited;

      const approved = await client.approve('ses_nats_ok', 'call_ses_nats_ok', { reason: 'ship it' });
      assert.equal([approved.resolved, approved.outcome, approved.kind], [true, 'approved', 'approval']);
      assert.match(approved.resumeInputId ?? '', /^inp_resume_exe_/);
      assert.is((await client.approve('ses_nats_ok', 'call_ses_nats_ok')).resolved, false, 'the same decision again changes nothing');
      const flip = await client.deny('ses_nats_ok', 'call_ses_nats_ok').catch((e: Error) => e);
      assert.match((flip as Error).message, 'already_resolved');

      const denied = await runCli(['deny', 'ses_nats_no', 'call_ses_nats_no', '--reason', 'not today', '--nats', url, ...as(CLIENT)]);
      assert.is(denied.code, 0, denied.stdout + denied.stderr);
      assert.match(denied.stdout, 'denied call call_ses_nats_no of ses_nats_no');

      await survivor.waitFor('ses_nats_ok  done: approval call_ses_nats_ok approved');
      await waitFor(async () => (await client.status('ses_nats_no')).outcome === 'succeeded', {
        timeoutMs: 30_000,
        intervalMs: 100,
        what: 'the denied turn ends',
      });
      const lines = readFileSync(effects, 'utf8').trim().split('\n');
      assert.equal(lines.length, 1, `ran once: ${lines.join(' | ')}`);
      assert.match(lines[0]!, /^ses_nats_ok ses_nats_ok:exe_\S+:call_ses_nats_ok$/);
      const events = await client.replay({ sessionId: 'ses_nats_ok' });
      assert.is(events.filter((e) => e.type === 'tool.started').length, 1);
      const decided = events.find((e) => e.type === 'wait.resolved');
      assert.equal(decided?.payload, {
        executionId: waiting.executionId,
        kind: 'approval',
        name: 'call_ses_nats_ok',
        outcome: 'approved',
        messageId: waiting.waits[0]!.messageId,
        callId: 'call_ses_nats_ok',
        reason: 'ship it',
      });
    } finally {
      await client.close();
    }
  },
);

s.run();
