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
import { runCli } from '../support/cli.ts';
import { closeSharedFiles, sharedFile } from '../support/processes.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { admitInput } from '../../src/input/admit.ts';
import { startFakeOpenAI, messageText, type ChatCompletionRequest, type ScriptStep } from '../../src/testing/fake-openai.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';

const AGENTS = fileURLToPath(new URL('./fixtures/agents.ts', import.meta.url));
const systemOf = (r: ChatCompletionRequest) => messageText(r.messages.find((m) => m.role === 'system'));
const isResearcher = (r: ChatCompletionRequest) => systemOf(r).startsWith('You research');
/** A researcher's prompts in a request (the last one is what it is asked; a continuation's note comes after it). */
const promptsOf = (r: ChatCompletionRequest) => r.messages.filter((m) => m.role === 'user' && messageText(m).startsWith('Find out about '));

/**
 * The researcher answers with its topic and how many prompts its session has had (a prompt run
 * twice says `answer 2`). The lead calls the researcher on two topics at once, with new call ids each
 * time it is asked (as a real model would), then answers with the results of its last calls.
 */
function leadAndResearchers(): (r: ChatCompletionRequest) => ScriptStep {
  let asked = 0;
  return (r) => {
    if (isResearcher(r)) {
      const prompts = promptsOf(r);
      const topic = messageText(prompts.at(-1)).replace('Find out about ', '').replace('.', '');
      return { kind: 'text', text: `${topic} grow on trees (answer ${prompts.length}).` };
    }
    if (r.messages.at(-1)?.role === 'tool') {
      const lastCall = r.messages.map((m) => m.role).lastIndexOf('assistant');
      const results = r.messages.slice(lastCall + 1).map((m) => messageText(m));
      return { kind: 'text', text: `The team found: ${results.join(' / ')}` };
    }
    asked++;
    return {
      kind: 'toolCalls',
      calls: [
        { id: `call_apples_${asked}`, name: 'researcher', arguments: { topic: 'apples' } },
        { id: `call_pears_${asked}`, name: 'researcher', arguments: { topic: 'pears' } },
      ],
    };
  };
}

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
    const env = { FAKE_OPENAI_URL: server.url };
    for (let k = 0; k < kills; k++) {
      // the first runs the lead's turn only; the next ones recover it (their researchers held); each stops just before the append that records the lead's wait
      const w =
        k === 0
          ? f.spawn({ ...common, env, mode: 'hold', sessions: ['ses_lead'], stopBeforeAppend: 'wait.started' })
          : f.spawn({ ...common, env: { ...env, HOLD_RESEARCHERS: '1' }, mode: 'work', sessions: [], stopBeforeAppend: 'wait.started' });
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
