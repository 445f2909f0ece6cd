/**
 * The gateway's chat routes, for the AI SDK's `useChat` (its `DefaultChatTransport`, `api` set to
 * `<gateway>/v1/chat`): the chat id is the session id.
 *
 * - `POST /v1/chat` `{ id, messages, trigger: 'submit-message' }`: admits the last message (a user
 *   message; its id makes the admission idempotent, so a retried request runs once) and answers the
 *   turn as a UI message stream (chat-chunks.ts), ending with `data: [DONE]`.
 * - `GET /v1/chat/:id/stream` (the transport's `reconnectToStream`, e.g. `useChat({ resume: true })`
 *   after a reload or a dropped connection): 204 when no turn of the session is under way, else the
 *   turn of its last prompt replayed from the log, then live.
 *
 * The text of a user message becomes the prompt; its `file` parts (a data: URL or an https URL)
 * become image or file parts.
 */
import type { ServerResponse } from 'node:http';
import { ErrorCode, HttpError, messageOf } from '../errors.ts';
import { validateId } from '../ids.ts';
import type { PromptPart } from '../input/prompt.ts';
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

/** The UI message stream of the turn that runs `inputId`, from `afterSeq` in the log, then live, until it ends. */
export async function streamChatTurn(
  res: ServerResponse,
  sessions: ChatSessions,
  live: LiveSource | undefined,
  sessionId: string,
  turn: { inputIds: readonly string[]; afterSeq: number; openedAtSeq: number },
  onError: (err: unknown) => void,
  bounds: { maxBufferedBytes: number; stallMs?: number } = { maxBufferedBytes: 1024 * 1024 },
): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-vercel-ai-ui-message-stream': 'v1',
    'x-accel-buffering': 'no',
  });
  const fold: ChatFold = chatFold({ inputIds: turn.inputIds, messageId: `msg_${turn.inputIds[0]}`, openedAtSeq: turn.openedAtSeq });
  let closed = false;
  // a client that does not read is cut (it resumes with GET /v1/chat/:id/stream)
  const stall = watchStall(res, bounds.maxBufferedBytes, bounds.stallMs);
  const write = (e: Parameters<ChatFold['feed']>[0]) => {
    if (closed) return;
    for (const chunk of fold.feed(e)) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    stall.over();
    if (fold.done) {
      res.write('data: [DONE]\n\n');
      void stop();
    }
  };
  const listening = live ? await live(sessionId, (e) => (e.seq === undefined ? write(e) : undefined)) : undefined;
  const following = await sessions.follow(sessionId, (e: SessionEvent) => write(e), { afterSeq: turn.afterSeq, onError });
  const stop = async () => {
    if (closed) return;
    closed = true;
    stall.end();
    await listening?.close();
    await following.close();
  };
  res.on('close', () => void stop().catch(onError));
  if (fold.done) await stop();
}

/** Reads `POST /v1/chat`'s body: the session, the last message's id and prompt. */
export function parseChatRequest(body: Record<string, unknown>): { sessionId: string; inputId: string; prompt: string | PromptPart[] } {
  const sessionId = validateId(body.id, 'chat id (the session id)');
  if (body.trigger !== undefined && body.trigger !== 'submit-message')
    throw bad(
      `trigger ${JSON.stringify(body.trigger)} is not supported: send a new message (to try another answer, fork the session at a settled point: POST /v1/sessions/:id/fork)`,
    );
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) throw bad('messages must be a non-empty list (the chat so far, the new message last)');
  const last = messages[messages.length - 1] as { id?: unknown; role?: unknown; parts?: unknown };
  if (last?.role !== 'user') throw bad(`the last message must be the user's new message, not ${JSON.stringify(last?.role)}`);
  let inputId: string;
  try {
    inputId = validateId(`ui_${String(last.id)}`, 'message id');
  } catch (err) {
    throw bad(`the last message's id: ${messageOf(err)}`);
  }
  return { sessionId, inputId, prompt: promptOfMessage(last.parts) };
}

/**
 * Where a resumed chat stream starts, from the session's status: the running execution's turn
 * (replayed from its claim), else the first prompt waiting to run; undefined when nothing is under way.
 */
export function turnUnderWay(status: SessionStatus): { inputIds: string[]; afterSeq: number; openedAtSeq: number } | undefined {
  const exec = status.execution;
  if (exec && exec.outcome === null) return { inputIds: exec.inputIds, afterSeq: exec.claimedSeq - 1, openedAtSeq: status.seq };
  const next = status.pending[0];
  if (next && status.pendingFrom === 0) return { inputIds: [next.inputId], afterSeq: next.seq - 1, openedAtSeq: status.seq };
  return undefined;
}
