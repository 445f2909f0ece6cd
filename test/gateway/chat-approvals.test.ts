/**
 * Approvals in the chat, through a real `sessiond serve --http` process and the AI SDK's own
 * `AbstractChat` with `DefaultChatTransport` (what `useChat` runs): a turn that waits shows the call
 * as `approval-requested` and its stream ends there; `addToolApprovalResponse` answers through the
 * chat route (approved with `sendAutomaticallyWhen`, denied with `sendMessage`) and the resumed turn
 * streams into the same message. A reader without the approve scope follows the turn through a
 * decision made on the gateway's approve route; a message sent again replays through a decision
 * made since. 403 without the scope, 409 for a changed decision or a call nothing waits for,
 * 400 for an answer that is not one the gateway asked for.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  readUIMessageStream,
  type ChatInit,
  type ChatState,
  type UIMessage,
} from 'ai';
import { startCli, type LongRunning } from '../support/cli.ts';
import { writeRunner } from '../support/wait-runner.ts';
import { stablePort } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';

const APPROVER = 'approver-token-0123456789';
const VIEWER = 'viewer-token-0123456789ab';
const tmp = tempDir();
let server: LongRunning;
let base: string;

/** The chat state a framework keeps (React's, Vue's…), in memory. */
class MemoryState implements ChatState<UIMessage> {
  status: ChatState<UIMessage>['status'] = 'ready';
  error: Error | undefined = undefined;
  messages: UIMessage[] = [];
  pushMessage = (m: UIMessage) => {
    this.messages = [...this.messages, m];
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (i: number, m: UIMessage) => {
    this.messages = this.messages.map((x, j) => (j === i ? m : x));
  };
  snapshot = <T>(t: T): T => structuredClone(t);
}

class Chat extends AbstractChat<UIMessage> {
  constructor(init: ChatInit<UIMessage>) {
    super({ ...init, state: new MemoryState() });
  }
}

const transport = (token: string) => new DefaultChatTransport<UIMessage>({ api: `${base}/v1/chat`, headers: { authorization: `Bearer ${token}` } });
type ToolPart = { type: string; state: string; toolCallId: string; approval?: { id: string }; output?: unknown };
const toolOf = (chat: Chat) => chat.messages.at(-1)?.parts.find((p) => p.type === 'tool-deploy') as ToolPart | undefined;
const textOf = (chat: Chat) =>
  (chat.messages.at(-1)?.parts ?? [])
    .filter((p) => p.type === 'text')
    .map((p) => (p as { text: string }).text)
    .join('|');

test.before(async () => {
  const tokens = tmp.file('tokens.json');
  writeFileSync(
    tokens,
    JSON.stringify({
      tokens: [
        // one tenant: each reaches the sessions the other started
        { name: 'approver', token: APPROVER, sessions: 'ses_', tenant: 'shop', scopes: ['read', 'prompt', 'approve'] },
        { name: 'viewer', token: VIEWER, sessions: 'ses_', tenant: 'shop' },
      ],
    }),
  );
  const runner = tmp.file('runner.mjs');
  writeRunner(runner, tmp.file('effects.txt'));
  const port = await stablePort();
  base = `http://127.0.0.1:${port}`;
  server = startCli(['serve', '--http', String(port), '--db', tmp.file('chat.db'), '--tokens', tokens, '--runner', runner]);
  await server.waitFor('gateway: http://127.0.0.1:');
});
test.after(async () => {
  server?.child.kill('SIGTERM');
  await server?.exited;
  tmp.remove();
});

test('approved through the chat route: the request ends the stream, addToolApprovalResponse resumes the turn into the same message', async () => {
  const chat = new Chat({ id: 'ses_chat_yes', transport: transport(APPROVER), sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses });
  await chat.sendMessage({ text: 'deploy' });
  assert.is(chat.status, 'ready', 'the stream ended at the approval request: the page may answer');
  const asked = toolOf(chat);
  assert.equal([asked?.state, asked?.toolCallId, asked?.approval?.id], ['approval-requested', 'call_ses_chat_yes', 'call_ses_chat_yes']);
  const messageId = chat.messages.at(-1)!.id;
  await chat.addToolApprovalResponse({ id: 'call_ses_chat_yes', approved: true, reason: 'ship it' });
  await waitFor(() => chat.status === 'ready' && toolOf(chat)?.state === 'output-available', { what: 'the resumed turn in the chat', timeoutMs: 20_000 });
  assert.is(chat.error, undefined);
  assert.equal(toolOf(chat)!.output, 'deployed');
  assert.match(textOf(chat), 'done: approval call_ses_chat_yes approved');
  assert.is(chat.messages.length, 2, 'one user message, one assistant message');
  assert.is(chat.messages.at(-1)!.id, messageId, 'the resumed turn went on in the same message');

  // the message sent again (a retried request) replays its turn through the decision, to its end
  const retried = await transport(APPROVER).sendMessages({
    chatId: 'ses_chat_yes',
    messages: [chat.messages[0]!],
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined,
  });
  let replayed: UIMessage | undefined;
  for await (const m of readUIMessageStream({ stream: retried, terminateOnError: true })) replayed = m;
  assert.is((replayed!.parts.find((p) => p.type === 'tool-deploy') as ToolPart).state, 'output-available', 'not stopped at the decided request');

  // the same decision again changes nothing; a different one is 409, saying so
  const answer = (approved: boolean, token = APPROVER, id = 'call_ses_chat_yes') =>
    fetch(`${base}/v1/chat`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        id: 'ses_chat_yes',
        trigger: 'submit-message',
        messages: [
          {
            id: messageId,
            role: 'assistant',
            parts: [{ type: 'tool-deploy', toolCallId: 'call_ses_chat_yes', state: 'approval-responded', input: {}, approval: { id, approved } }],
          },
        ],
      }),
    });
  const changed = await answer(false);
  assert.is(changed.status, 409);
  assert.match(((await changed.json()) as { error: { message: string } }).error.message, 'already resolved');
  const same = await answer(true);
  assert.is(same.status, 200);
  await same.text();
  const unknown = await fetch(`${base}/v1/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${APPROVER}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      id: 'ses_chat_yes',
      messages: [
        {
          id: messageId,
          role: 'assistant',
          parts: [{ type: 'tool-deploy', toolCallId: 'call_nope', state: 'approval-responded', input: {}, approval: { id: 'call_nope', approved: true } }],
        },
      ],
    }),
  });
  assert.is(unknown.status, 409);
  assert.match(((await unknown.json()) as { error: { message: string } }).error.message, 'has no approval named call_nope');
  const noScope = await answer(true, VIEWER);
  assert.is(noScope.status, 403);
  assert.match(((await noScope.json()) as { error: { message: string } }).error.message, 'approve scope');
  const foreign = await answer(true, APPROVER, 'someone-elses-id');
  assert.is(foreign.status, 400);
  assert.match(((await foreign.json()) as { error: { message: string } }).error.message, 'approval ids are the call ids');
});

test('denied through the chat route with sendMessage: the call shows denied, the turn goes on', async () => {
  const chat = new Chat({ id: 'ses_chat_no', transport: transport(APPROVER) });
  await chat.sendMessage({ text: 'deploy' });
  assert.is(toolOf(chat)?.state, 'approval-requested');
  await chat.addToolApprovalResponse({ id: 'call_ses_chat_no', approved: false, reason: 'not on a Friday' });
  await chat.sendMessage();
  assert.is(chat.error, undefined);
  assert.is(toolOf(chat)?.state, 'output-denied');
  assert.match(textOf(chat), 'done: approval call_ses_chat_no denied');
});

test("approved on the gateway's route: a reader without the approve scope follows the turn to its end; one with it replays to the wait", async () => {
  const chat = new Chat({ id: 'ses_chat_route', transport: transport(APPROVER) });
  await chat.sendMessage({ text: 'deploy' });
  assert.is(toolOf(chat)?.state, 'approval-requested');
  // a page reloaded by one who may approve: the waiting turn replayed, ending at the request
  const replay = await transport(APPROVER).reconnectToStream({ chatId: 'ses_chat_route' });
  assert.ok(replay, 'a waiting turn is under way');
  let replayed: UIMessage | undefined;
  for await (const m of readUIMessageStream({ stream: replay!, terminateOnError: true })) replayed = m;
  assert.is((replayed!.parts.find((p) => p.type === 'tool-deploy') as ToolPart).state, 'approval-requested');
  // a viewer follows through the wait
  const watching = await transport(VIEWER).reconnectToStream({ chatId: 'ses_chat_route' });
  assert.ok(watching);
  const followed = (async () => {
    let last: UIMessage | undefined;
    for await (const m of readUIMessageStream({ stream: watching!, terminateOnError: true })) last = m;
    return last;
  })();
  const res = await fetch(`${base}/v1/sessions/ses_chat_route/calls/call_ses_chat_route/approve`, {
    method: 'POST',
    headers: { authorization: `Bearer ${APPROVER}`, 'content-type': 'application/json' },
    body: '{}',
  });
  assert.is(res.status, 200);
  const seen = await followed;
  const part = seen!.parts.find((p) => p.type === 'tool-deploy') as ToolPart;
  assert.equal([part.state, part.output], ['output-available', 'deployed']);
  // the page that asked answers late: the same decision streams what the turn did since
  await chat.addToolApprovalResponse({ id: 'call_ses_chat_route', approved: true });
  await chat.sendMessage();
  assert.is(chat.error, undefined);
  await waitFor(() => toolOf(chat)?.state === 'output-available', { what: 'the output in the page that asked' });
});

test.run();
