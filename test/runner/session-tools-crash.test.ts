/**
 * Session tools through a crash of the parent's worker, in real processes against the local
 * OpenAI-compatible server: the lead model calls two researcher sessions at once; the lead's worker
 * is SIGKILLed after both children's prompts are admitted and before its wait is recorded. Another
 * worker recovers the lead's turn: it awaits the same children (the model is not asked again for
 * the step it answered), each child runs its prompt once, and the lead answers with their answers;
 * the same when the recovering worker is killed at the same point too.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fileURLToPath } from 'node:url';
import { writeFileSync } from 'node:fs';
import { runCli } from '../support/cli.ts';
import { closeSharedFiles, sharedFile } from '../support/processes.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { admitInput } from '../../src/input/admit.ts';
import { startFakeOpenAI, messageText } from '../../src/testing/fake-openai.ts';
import { isResearcher, leadAndResearchers, promptsOf } from './fixtures/agents-script.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';

const AGENTS = fileURLToPath(new URL('./fixtures/agents.ts', import.meta.url));

test.after.each(closeSharedFiles);

/**
 * The lead's turn on a worker killed after admitting both children and before recording its wait;
 * then `kills - 1` more workers that recover the turn (their researchers held) killed at the same
 * point; then one worker that finishes everything.
 */
async function leadKilled(kills: number): Promise<void> {
  const server = await startFakeOpenAI({ defaultReply: leadAndResearchers() });
  const f = sharedFile('session-tools-crash');
  const events = (id: string) => f.log.readSession(id) as Promise<SessionEvent[]>;
  const children = ['ses_lead-researcher-apples', 'ses_lead-researcher-pears'];
  try {
    await admitInput(f.handler, 'ses_lead', { prompt: 'What about apples and pears?' });
    const common = { module: AGENTS, leaseMs: 1_500, heartbeatMs: 500, sweepMs: 200 };
    const go = f.tmp.file('researchers-go');
    const env = { FAKE_OPENAI_URL: server.url, RESEARCHERS_GO: go };
    for (let k = 0; k < kills; k++) {
      // the first runs the lead's turn only; the next ones recover it (their researchers held); each stops just before the append that records the lead's wait
      const w =
        k === 0
          ? f.spawn({ ...common, env, mode: 'hold', sessions: ['ses_lead'], stopBeforeAppend: 'wait.started' })
          : f.spawn({ ...common, env, mode: 'work', sessions: [], stopBeforeAppend: 'wait.started' });
      await w.waitForLine((l) => l === 'STOPPING ses_lead wait.started');
      for (const child of children)
        assert.is((await events(child)).filter((e) => e.type === 'input.admitted').length, 1, `${child}: its prompt admitted (once) before kill ${k + 1}`);
      assert.not.ok(
        (await events('ses_lead')).some((e) => e.type === 'wait.started'),
        'the wait is not recorded when the worker dies',
      );
      w.child.kill('SIGKILL');
      await w.exited;
    }

    writeFileSync(go, ''); // the researchers go on: none asked its model on a killed worker
    f.spawn({ ...common, env, mode: 'work', sessions: [] });
    await waitFor(async () => (await events('ses_lead')).some((e) => e.type === 'execution.settled' && e.payload.outcome === 'succeeded'), {
      what: 'the lead to answer',
      timeoutMs: 30_000,
    });

    const lead = await events('ses_lead');
    const answer = lead.flatMap((e) => (e.type === 'text.completed' ? [e.payload.text] : [])).at(-1) ?? '';
    assert.match(answer, 'apples grow on trees (answer 1).', "the first apples child's answer is the lead's");
    assert.match(answer, 'pears grow on trees (answer 1).', "the first pears child's answer is the lead's");
    assert.is(lead.filter((e) => e.type === 'recovery.completed').length, kills, 'the lead recovered after each kill');
    for (const child of children) {
      const log = await events(child);
      assert.is(log.filter((e) => e.type === 'input.admitted' && e.payload.source === 'user').length, 1, `${child}: its prompt admitted once`);
      const topic = child.split('-').at(-1)!;
      const asked = server.requests.filter((r) => r.chat && isResearcher(r.chat) && messageText(promptsOf(r.chat).at(-1)).includes(topic));
      assert.is(asked.length, 1, `${child}: its prompt ran once (one model call)`);
    }
    const leadCalls = server.requests.filter((r) => r.chat && !isResearcher(r.chat));
    assert.is(leadCalls.length, 2, 'the lead model was asked twice: for the calls (not again after a crash), then for the answer');
    // (a grace of 1 ms: each child input must be awaited by its parent by now, child_call_unawaited)
    const check = await runCli(['check', '--db', f.file, '--grace-ms', '1']);
    assert.is(check.code, 0, check.stdout + check.stderr);
  } finally {
    await server.close();
  }
}

test("session tools - the lead's worker SIGKILLed after admitting both children, before its wait: the recovered turn awaits the same children", async () => {
  await leadKilled(1);
});

test('session tools - the worker recovering the lead killed at the same point too: the next recovery still awaits the first children', async () => {
  await leadKilled(2);
});

test.run();
