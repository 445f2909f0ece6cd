/**
 * A session as a model's tool (`defineSessionTool`), in real worker processes against the local
 * OpenAI-compatible server: the lead model calls its researcher tool twice at once, each call runs
 * as a turn of its own child session (the researcher's instructions, its own history), the lead's
 * turn waits holding nothing, and the children's answers come back as the calls' results.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fileURLToPath } from 'node:url';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { startFakeOpenAI, messageText, type ChatCompletionRequest, type ScriptStep } from '../../src/testing/fake-openai.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';

const AGENTS = fileURLToPath(new URL('./fixtures/agents.ts', import.meta.url));

async function readEvents(db: string, sessionId: string): Promise<SessionEvent[]> {
  const handle = openDatabase(db, { readonly: true });
  try {
    return await new SqliteEventLog(handle).readSession(sessionId);
  } finally {
    handle.close();
  }
}

const systemOf = (r: ChatCompletionRequest) => messageText(r.messages.find((m) => m.role === 'system'));

/** The researcher answers its prompt; the lead calls the researcher on two topics at once, then answers with the results. */
function reply(r: ChatCompletionRequest): ScriptStep {
  const last = r.messages.at(-1);
  if (systemOf(r).startsWith('You research'))
    return { kind: 'text', text: `${messageText(last).replace('Find out about ', '').replace('.', '')} grow on trees.` };
  if (messageText(r.messages.find((m) => m.role === 'user')).includes('yourself')) {
    if (last?.role === 'tool') return { kind: 'text', text: `I could not: ${messageText(last)}` };
    return { kind: 'toolCalls', calls: [{ id: 'call_self', name: 'ask_myself', arguments: { question: 'who am I?' } }] };
  }
  if (last?.role === 'tool')
    return {
      kind: 'text',
      text: `The team found: ${r.messages
        .filter((m) => m.role === 'tool')
        .map((m) => messageText(m))
        .join(' / ')}`,
    };
  return {
    kind: 'toolCalls',
    calls: [
      { id: 'call_apples', name: 'researcher', arguments: { topic: 'apples' } },
      { id: 'call_pears', name: 'researcher', arguments: { topic: 'pears' } },
    ],
  };
}

test('session tools - the lead model delegates two calls at once to researcher sessions; their answers are the results', async () => {
  const tmp = tempDir('sessiond-session-tools-');
  const db = tmp.file('agents.db');
  const server = await startFakeOpenAI({ defaultReply: reply });
  const worker = startCli(['start', '--db', db, '--runner', AGENTS, '--sweep-ms', '200'], { env: { FAKE_OPENAI_URL: server.url } });
  try {
    await worker.waitFor('send it a prompt');
    const admitted = await runCli(['prompt', 'ses_lead', 'What about apples and pears?', '--db', db]);
    assert.is(admitted.code, 0, admitted.stderr);
    await worker.waitFor('ses_lead  turn succeeded', 30_000);

    const lead = await readEvents(db, 'ses_lead');
    const answer = lead.flatMap((e) => (e.type === 'text.completed' ? [e.payload.text] : [])).at(-1) ?? '';
    assert.match(answer, 'The team found: ');
    assert.match(answer, 'apples grow on trees.');
    assert.match(answer, 'pears grow on trees.');
    assert.equal(
      lead.filter((e) => e.type === 'execution.settled').map((e) => e.payload.outcome),
      ['waiting', 'succeeded'],
      'one wait for both calls, then the answer',
    );
    assert.equal(
      lead.filter((e) => e.type === 'tool.succeeded').map((e) => [e.payload.callId, e.payload.output]),
      [
        ['call_apples', 'apples grow on trees.'],
        ['call_pears', 'pears grow on trees.'],
      ],
      "each call's result is its child's answer, recorded once",
    );

    for (const topic of ['apples', 'pears']) {
      const child = `ses_lead-researcher-${topic}`;
      const events = await readEvents(db, child);
      assert.is(events.filter((e) => e.type === 'input.admitted').length, 1, `${child}: one prompt`);
      assert.is(events.filter((e) => e.type === 'execution.claimed').length, 1, `${child}: one turn`);
      const asked = server.requests.filter((r) => r.chat && systemOf(r.chat).startsWith('You research') && messageText(r.chat.messages.at(-1)).includes(topic));
      assert.is(asked.length, 1, `${child}: one model call`);
      assert.equal(
        asked[0]!.chat!.messages.map((m) => m.role),
        ['system', 'user'],
        'the child has its own instructions and history: not the lead conversation',
      );
    }
    const leadCalls = server.requests.filter((r) => r.chat && systemOf(r.chat).startsWith('You lead'));
    assert.is(leadCalls.length, 2, 'the lead model was asked twice: to call, then to answer (not again on resume)');
    assert.equal(
      leadCalls[0]!.chat!.tools?.map((t) => t.function.name),
      ['researcher', 'ask_myself'],
    );
    assert.equal(
      leadCalls[1]!.chat!.messages.map((m) => m.role),
      ['system', 'user', 'assistant', 'tool', 'tool'],
    );
    const check = await runCli(['check', '--db', db]);
    assert.is(check.code, 0, check.stdout + check.stderr);
  } finally {
    worker.child.kill('SIGTERM');
    await worker.exited;
    await server.close();
    tmp.remove();
  }
});

test('session tools - a call into the calling session itself is refused; the model sees why and answers', async () => {
  const tmp = tempDir('sessiond-session-tools-');
  const db = tmp.file('self.db');
  const server = await startFakeOpenAI({ defaultReply: reply });
  const worker = startCli(['start', '--db', db, '--runner', AGENTS, '--sweep-ms', '200'], { env: { FAKE_OPENAI_URL: server.url } });
  try {
    await worker.waitFor('send it a prompt');
    await runCli(['prompt', 'ses_selfish', 'ask yourself', '--db', db]);
    await worker.waitFor('ses_selfish  turn succeeded', 30_000);
    const events = await readEvents(db, 'ses_selfish');
    assert.equal(
      events.filter((e) => e.type === 'execution.settled').map((e) => e.payload.outcome),
      ['succeeded'],
      'refused before it waited: no wait',
    );
    const failed = events.find((e) => e.type === 'tool.failed');
    assert.is(failed?.type === 'tool.failed' && failed.payload.callId, 'call_self');
    const answer = events.flatMap((e) => (e.type === 'text.completed' ? [e.payload.text] : [])).at(-1) ?? '';
    assert.match(answer, 'I could not: ');
    assert.match(answer, 'session ses_selfish cannot call itself');
    assert.is(events.filter((e) => e.type === 'input.admitted').length, 1, 'nothing admitted into itself');
  } finally {
    worker.child.kill('SIGTERM');
    await worker.exited;
    await server.close();
    tmp.remove();
  }
});

test.run();
