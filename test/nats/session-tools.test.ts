// Session tools over NATS with three real `sessiond start --nats` workers against the local
// OpenAI-compatible server: the lead model calls two researcher sessions at once; the worker running
// the lead is SIGKILLed after both children are admitted and before its wait is appended (a point
// the runner announces). The others recover the lead's turn: it awaits the same children (the model
// is not asked again for that step), each child runs its prompt once, and the lead answers with both.
import { cliSuite, natsWorker } from './cli-suite.ts';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SessiondClient } from '../../src/client/client.ts';
import { CLIENT } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { startFakeOpenAI, messageText } from '../../src/testing/fake-openai.ts';
import { isResearcher, leadAndResearchers, promptsOf } from '../runner/fixtures/agents-script.ts';
import type { LongRunning } from '../support/cli.ts';

const AGENTS = fileURLToPath(new URL('../runner/fixtures/agents.ts', import.meta.url));
const s = cliSuite('session tools over NATS');

s(
  "session tools (NATS) - three workers: the lead's worker SIGKILLed after admitting both children, before its wait; the others await the same children",
  async (ctx) => {
    const server = await startFakeOpenAI({ defaultReply: leadAndResearchers() });
    const go = ctx.tmp.file('researchers-go');
    const env = { FAKE_OPENAI_URL: server.url, KILL_POINT_FILE: ctx.tmp.file('kill-point'), RESEARCHERS_GO: go };
    const flags = ['--runner', AGENTS, '--lease-ms', '1500', '--heartbeat-ms', '500', '--sweep-ms', '300'];
    const workers: LongRunning[] = [];
    for (const db of ['a.db', 'b.db', 'c.db']) workers.push(await natsWorker(ctx, db, 0, flags, env));
    const client = await SessiondClient.connect({ connection: { servers: ctx.server.url, ...CLIENT } });
    const children = ['ses_lead-researcher-apples', 'ses_lead-researcher-pears'];
    try {
      await client.admit('ses_lead', { prompt: 'What about apples and pears?' });
      await waitFor(async () => workers.some((w) => w.output().includes('POINT ses_lead children admitted')), {
        timeoutMs: 30_000,
        intervalMs: 50,
        what: 'the lead to admit its children',
      });
      const victim = workers.find((w) => w.output().includes('POINT ses_lead children admitted'))!;
      for (const id of children)
        assert.is((await client.replay({ sessionId: id })).filter((e) => e.type === 'input.admitted').length, 1, `${id}: admitted before the kill`);
      assert.not.ok(
        (await client.replay({ sessionId: 'ses_lead' })).some((e) => e.type === 'wait.started'),
        'the wait is not appended when the worker dies',
      );
      victim.child.kill('SIGKILL');
      await victim.exited;
      writeFileSync(go, ''); // the researchers go on: none asked its model on the killed worker

      await waitFor(async () => (await client.status('ses_lead')).outcome === 'succeeded', { timeoutMs: 60_000, intervalMs: 100, what: 'the lead answers' });
      const lead = await client.replay({ sessionId: 'ses_lead' });
      const answer = lead.flatMap((e) => (e.type === 'text.completed' ? [e.payload.text] : [])).at(-1) ?? '';
      assert.match(answer, 'apples grow on trees (answer 1).', "the first apples child's answer is the lead's");
      assert.match(answer, 'pears grow on trees (answer 1).', "the first pears child's answer is the lead's");
      for (const id of children) {
        const child = await client.replay({ sessionId: id });
        assert.is(child.filter((e) => e.type === 'input.admitted' && e.payload.source === 'user').length, 1, `${id}: its prompt admitted once`);
        const topic = id.split('-').at(-1)!;
        const asked = server.requests.filter((r) => r.chat && isResearcher(r.chat) && messageText(promptsOf(r.chat).at(-1)).includes(topic));
        assert.is(asked.length, 1, `${id}: its prompt ran once (one model call)`);
      }
      assert.is(server.requests.filter((r) => r.chat && !isResearcher(r.chat)).length, 2, 'the lead model was asked twice: for the calls, then for the answer');
    } finally {
      await client.close();
      await server.close();
    }
  },
);

s.run();
