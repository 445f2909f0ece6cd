/**
 * The gateway's chat routes for the AI SDK's `useChat` (`POST /v1/chat`, `GET /v1/chat/:id/stream`;
 * the chat id is the session id): admit a message or the approvals it answers, and stream the turn
 * (chat-chunks.ts). What each does: docs/gateway.md#for-the-ai-sdks-usechat.
 */
import type { ServerResponse } from 'node:http';
import { ErrorCode, HttpError, messageOf } from '../errors.ts';
import { validateId } from '../ids.ts';
import type { PromptPart } from '../events/prompt.ts';
import type { SessionEvent } from '../events/envelope.ts';
import type { SessionStatus, Sessions } from '../sessions/sessions.ts';
import { chatFold, type ChatFold } from './chat-chunks.ts';
import type { LiveSource } from './event-stream.ts';
import { watchStall } from './stall.ts';

type ChatSessions = Omit<Sessions, 'close'>;

interface UIPart {
  type: string;
  text?: string;
  mediaType?: string;
  url?: string;
  filename?: string;
}

const bad = (why: string) => new HttpError(400, ErrorCode.InvalidPayload, `Invalid chat request: ${why}.`);

/** The prompt of a UI message's parts: text only as a string, else a list of parts. */
export function promptOfMessage(parts: unknown): string | PromptPart[] {
  if (!Array.isArray(parts) || parts.length === 0) throw bad('the last message has no parts');
  const out: PromptPart[] = [];
  for (const raw of parts as UIPart[]) {
    if (raw?.type === 'text' && typeof raw.text === 'string') out.push({ type: 'text', text: raw.text });
    else if (raw?.type === 'file' && typeof raw.url === 'string' && typeof raw.mediaType === 'string') {
      const data = /^data:([^;,]+)?;base64,(.*)$/s.exec(raw.url);
      const image = raw.mediaType.startsWith('image/');
      const source = data ? { data: data[2]!, mediaType: raw.mediaType } : { url: raw.url, mediaType: raw.mediaType };
      out.push(
        image ? ({ type: 'image', ...source } as PromptPart) : ({ type: 'file', ...source, ...(raw.filename ? { filename: raw.filename } : {}) } as PromptPart),
      );
    }
    // step-start, reasoning, tool and data parts of a user message carry nothing to admit
  }
  if (out.length === 0) throw bad('the last message has no text or file part');
  return out.every((p) => p.type === 'text') ? out.map((p) => (p as { text: string }).text).join('\n') : out;
}

/** Where a chat stream starts: the turn's inputs, the log position, and how its fold reads it (chat-chunks.ts). */
export interface ChatTurn {
  inputIds: readonly string[];
  afterSeq: number;
  openedAtSeq: number;
  /** The UI message's id (default `msg_<first input id>`). */
  messageId?: string;
  endAtWait?: boolean;
  answersTo?: readonly string[];
  endAtSeq?: number;
}

/** The UI message stream of the turn that runs `inputId`, from `afterSeq` in the log, then live, until it ends. */
export async function streamChatTurn(
  res: ServerResponse,
  sessions: ChatSessions,
  live: LiveSource | undefined,
  sessionId: string,
  turn: ChatTurn,
  onError: (err: unknown) => void,
  heartbeatMs?: number,
  bounds: { maxBufferedBytes: number; stallMs?: number } = { maxBufferedBytes: 1024 * 1024 },
): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-vercel-ai-ui-message-stream': 'v1',
    'x-accel-buffering': 'no',
  });
  const fold: ChatFold = chatFold({ ...turn, messageId: turn.messageId ?? `msg_${turn.inputIds[0]}` });
  let closed = false;
  // a client that does not read is cut (it resumes with GET /v1/chat/:id/stream)
  const stall = watchStall(res, bounds.maxBufferedBytes, bounds.stallMs);
  /** Session tool calls of the turn in progress: their child's live text, shown as the call's preliminary output. */
  const children = new Map<string, { close(): void | Promise<void> }>();
  /** The calls this message shows (a wait of another turn starts no watch). */
  const shown = new Set<string>();
  const watchChild = async (callId: string, child: string) => {
    if (!live || children.has(callId)) return;
    let text = '';
    const placeholder = { close: () => undefined };
    children.set(callId, placeholder);
    const sub = await live(child, (c) => {
      if (closed || c.seq !== undefined || c.type !== 'text.delta' || !children.has(callId)) return;
      text += String((c.payload as { delta?: unknown }).delta ?? '');
      res.write(`data: ${JSON.stringify(childProgress(callId, child, text))}\n\n`);
    });
    if (children.get(callId) === placeholder && !closed) children.set(callId, sub);
    else await sub.close();
  };
  const unwatchChild = (callId: string) => {
    const sub = children.get(callId);
    children.delete(callId);
    void Promise.resolve(sub?.close()).catch(onError);
  };
  const write = (e: Parameters<ChatFold['feed']>[0]) => {
    if (closed) return;
    const chunks = fold.feed(e);
    for (const chunk of chunks) {
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      if (chunk.type === 'tool-input-available') shown.add(String(chunk.toolCallId));
    }
    const p = e.payload as { kind?: string; callId?: string; child?: { sessionId: string } };
    if (e.type === 'wait.started' && p.kind === 'session' && p.callId && p.child && shown.has(p.callId))
      void watchChild(p.callId, p.child.sessionId).catch(onError);
    if ((e.type === 'tool.succeeded' || e.type === 'tool.failed') && p.callId && children.has(p.callId)) unwatchChild(p.callId);
    stall.over();
    if (fold.done) {
      res.write('data: [DONE]\n\n');
      void stop();
    }
  };
  const listening = live ? await live(sessionId, (e) => (e.seq === undefined ? write(e) : undefined)) : undefined;
  const following = await sessions.follow(sessionId, (e: SessionEvent) => write(e), { afterSeq: turn.afterSeq, onError });
  // a comment line now and then keeps proxies from closing a stream that waits (a turn waiting for a person)
  const heartbeat = heartbeatMs ? setInterval(() => closed || res.write(`: heartbeat ${new Date().toISOString()}\n\n`), heartbeatMs) : undefined;
  heartbeat?.unref();
  const stop = async () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    stall.end();
    for (const callId of [...children.keys()]) unwatchChild(callId);
    await listening?.close();
    await following.close();
  };
  res.on('close', () => void stop().catch(onError));
  if (fold.done) await stop();
}

/** A person's answer to a `tool-approval-request`, read from an `approval-responded` tool part. */
export interface ApprovalAnswer {
  callId: string;
  approved: boolean;
  reason?: string;
}

export type ChatRequest =
  | { kind: 'message'; sessionId: string; inputId: string; prompt: string | PromptPart[] }
  | { kind: 'approval'; sessionId: string; messageId: string; answers: ApprovalAnswer[] };

/** The approval answers of an assistant message's parts (none when it has no `approval-responded` part). */
export function approvalAnswersOf(parts: unknown): ApprovalAnswer[] {
  const out: ApprovalAnswer[] = [];
  for (const raw of Array.isArray(parts) ? (parts as Record<string, unknown>[]) : []) {
    if (typeof raw?.type !== 'string' || !(raw.type.startsWith('tool-') || raw.type === 'dynamic-tool') || raw.state !== 'approval-responded') continue;
    const approval = raw.approval as { id?: unknown; approved?: unknown; reason?: unknown } | undefined;
    const callId = raw.toolCallId;
    if (typeof callId !== 'string' || typeof approval?.id !== 'string' || typeof approval.approved !== 'boolean')
      throw bad('an approval-responded tool part needs toolCallId and approval { id, approved: true|false } (addToolApprovalResponse makes them)');
    if (approval.id !== callId)
      throw bad(`approval ${JSON.stringify(approval.id)} is not one this gateway asked for: its approval ids are the call ids (${callId})`);
    if (approval.reason !== undefined && (typeof approval.reason !== 'string' || approval.reason.length > 1000))
      throw bad(`the reason of approval ${callId} must be a string of at most 1000 characters`);
    out.push({ callId, approved: approval.approved, ...(typeof approval.reason === 'string' ? { reason: approval.reason } : {}) });
  }
  return out;
}

/** Reads `POST /v1/chat`'s body: a new message (the session, its id and prompt), or answers to approval requests. */
export function parseChatRequest(body: Record<string, unknown>): ChatRequest {
  const sessionId = validateId(body.id, 'chat id (the session id)');
  if (body.trigger !== undefined && body.trigger !== 'submit-message')
    throw bad(
      `trigger ${JSON.stringify(body.trigger)} is not supported: send a new message (to try another answer, fork the session at a settled point: POST /v1/sessions/:id/fork)`,
    );
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) throw bad('messages must be a non-empty list (the chat so far, the new message last)');
  const last = messages[messages.length - 1] as { id?: unknown; role?: unknown; parts?: unknown };
  if (last?.role === 'assistant') {
    const answers = approvalAnswersOf(last.parts);
    if (answers.length > 0) return { kind: 'approval', sessionId, messageId: String(last.id), answers };
  }
  if (last?.role !== 'user')
    throw bad(
      `the last message must be the user's new message (or an assistant message answering approval requests: addToolApprovalResponse), not ${JSON.stringify(last?.role)} without approval responses`,
    );
  let inputId: string;
  try {
    inputId = validateId(`ui_${String(last.id)}`, 'message id');
  } catch (err) {
    throw bad(`the last message's id: ${messageOf(err)}`);
  }
  return { kind: 'message', sessionId, inputId, prompt: promptOfMessage(last.parts) };
}

/**
 * Answers a chat's approval requests (the caller has the `approve` scope and reaches the session)
 * and says where the stream goes on: after the settle of the execution that asked, so the message
 * shows the decisions and the resumed turn, not what it showed already. A retried answer (the same
 * decision again) streams the same from the log; a different one is refused (409).
 */
export async function answerApprovals(
  sessions: ChatSessions,
  status: SessionStatus,
  request: Extract<ChatRequest, { kind: 'approval' }>,
  actor: { actor?: string } = {},
): Promise<ChatTurn> {
  for (const a of request.answers) {
    const decision = { ...(a.reason === undefined ? {} : { reason: a.reason }), ...actor };
    await (a.approved ? sessions.approve(request.sessionId, a.callId, decision) : sessions.deny(request.sessionId, a.callId, decision));
  }
  const exec = status.execution;
  // the execution that waits asked for these calls: read from its claim (else an answer sent again
  // after the turn went on: read the log from its start, where the calls were asked for)
  const askedHere = request.answers.every((a) => status.waits.some((w) => w.kind === 'approval' && w.name === a.callId && w.executionId === exec?.id));
  const afterSeq = exec?.outcome === 'waiting' && askedHere ? exec.claimedSeq - 1 : 0;
  // other calls still wait for an answer: the stream shows these decisions and ends
  const now = await sessions.status(request.sessionId);
  const endAtSeq = now.execution?.outcome === 'waiting' && waitsOpen(now) ? now.seq : undefined;
  return {
    messageId: request.messageId,
    endAtWait: true,
    openedAtSeq: status.seq,
    inputIds: [],
    afterSeq,
    answersTo: request.answers.map((a) => a.callId),
    ...(endAtSeq === undefined ? {} : { endAtSeq }),
  };
}

/**
 * Where a resumed chat stream starts, from the session's status: the running or waiting execution's
 * turn (replayed from its claim), else the first prompt waiting to run; undefined when nothing is under way.
 */
export function turnUnderWay(status: SessionStatus, mayApprove = false): ChatTurn | undefined {
  const exec = status.execution;
  // a turn that waits for a person: replayed from its claim; it ends at the wait for one who may answer it
  const endAtWait = mayApprove && (exec?.outcome !== 'waiting' || waitsOpen(status));
  if (exec && (exec.outcome === null || exec.outcome === 'waiting'))
    return { inputIds: exec.inputIds, afterSeq: exec.claimedSeq - 1, openedAtSeq: status.seq, endAtWait };
  const next = status.pending[0];
  if (next && status.pendingFrom === 0) return { inputIds: [next.inputId], afterSeq: next.seq - 1, openedAtSeq: status.seq, endAtWait };
  return undefined;
}

const waitsOpen = (status: SessionStatus): boolean => status.waits.some((w) => w.outcome === null);

/**
 * Whether the replay of a message sent again should end at its turn's wait: not when the wait was
 * decided since (the turn went on: the replay follows it), only while it is open or yet to come.
 */
export function replayEndsAtWait(status: SessionStatus, inputId: string): boolean {
  const exec = status.execution;
  if (!exec?.inputIds.includes(inputId)) return !exec || status.pending.some((p) => p.inputId === inputId);
  return exec.outcome !== 'waiting' || waitsOpen(status);
}

/** A session tool call's progress: the child's answer so far, as the call's preliminary output (the AI SDK's `preliminary` tool result). */
export function childProgress(callId: string, child: string, text: string): { type: string } & Record<string, unknown> {
  return { type: 'tool-output-available', toolCallId: callId, output: { session: child, text }, preliminary: true };
}
