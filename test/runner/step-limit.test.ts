/**
 * A model that keeps calling tools past `--max-steps`: the turn settles failed with `step_limit`,
 * never a silent success, and says so everywhere a person looks: the chat stream (the AI SDK's own
 * transport), `sessiond status`, `sessiond check` and the inspector's conversation. A real worker
 * (`sessiond serve --http 0 --runner openai`) against the local OpenAI-compatible server.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fileURLToPath } from 'node:url';
import { DefaultChatTransport, type UIMessage, type UIMessageChunk } from 'ai';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { startFakeOpenAI } from '../../src/testing/fake-openai.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { emptyConversation, foldConversation } from '../../src/inspector/conversation.ts';

const TOOLS = fileURLToPath(new URL('./fixtures/tools.ts', import.meta.url));

test('a model still calling tools at --max-steps: the turn fails step_limit in the chat stream, status, check and the inspector', async () => {
  const tmp = tempDir();
  const server = await startFakeOpenAI();
  const db = tmp.file('limit.db');
  const note = (id: string) => ({ kind: 'toolCalls' as const, calls: [{ id, name: 'note', arguments: { text: id } }] });
  server.script(note('call_1'), note('call_2'));
  const worker = startCli(
    ['serve', '--http', '0', '--db', db, '--runner', 'openai', '--model', 'fake-model', '--base-url', server.url, '--tools', TOOLS, '--max-steps', '2'],
    { env: { NOTES_FILE: tmp.file('notes.log') } },
  );
  try {
    await worker.waitFor(/gateway: (http:\/\/127\.0\.0\.1:\d+\/)/);
    const url = /gateway: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(worker.output())![1]!;
    const stream = await new DefaultChatTransport<UIMessage>({ api: `${url}v1/chat` }).sendMessages({
      chatId: 'ses_limit',
      messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'note forever' }] }],
      trigger: 'submit-message',
      messageId: undefined,
      abortSignal: undefined,
    });
    const chunks: UIMessageChunk[] = [];
    for await (const c of stream as unknown as AsyncIterable<UIMessageChunk>) chunks.push(c);
    const error = chunks.find((c) => c.type === 'error') as { errorText: string } | undefined;
    assert.ok(error, `the chat stream ends with an error: ${JSON.stringify(chunks.map((c) => c.type))}`);
    assert.match(error!.errorText, 'The turn stopped at its step limit: 2 model calls');
    assert.is(server.requests.length, 2, 'no third model call');

    const status = await runCli(['status', 'ses_limit', '--db', db]);
    assert.match(status.stdout, 'last turn failed');
    assert.match(status.stdout, /why\s+step_limit: The turn stopped at its step limit/);

    const check = await runCli(['check', '--db', db, '--safety-only']);
    assert.is(check.code, 0, 'not a violation');
    assert.match(check.stdout, /NOTE step_limit at seq \d+ \(session ses_limit, exe_/);

    const handle = openDatabase(db, { readonly: true });
    const events = await new SqliteEventLog(handle).readSession('ses_limit');
    handle.close();
    const turn = foldConversation(emptyConversation('ses_limit'), events).entries.find((x) => x.kind === 'turn');
    assert.ok(turn && turn.kind === 'turn');
    assert.is(turn.outcome, 'failed');
    assert.is(turn.error?.type, 'step_limit');
  } finally {
    worker.child.kill('SIGTERM');
    await worker.exited;
    await server.close();
    tmp.remove();
  }
});

test.run();
