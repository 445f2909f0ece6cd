/**
 * A local OpenAI-compatible chat-completions server for tests: real HTTP on loopback, the real SSE
 * chunk format, scripted replies (`echoReply` when none is left). Why: docs/testing.md#the-fake-openai-server.
 *
 *   const llm = await startFakeOpenAI({ apiKey: 'test-key' });   // baseURL: llm.url; llm.script(...)
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Token counts reported for a reply; missing counts are estimated with {@link estimateTokens}. */
export interface UsageOverride {
  prompt_tokens?: number;
  completion_tokens?: number;
  /** Sent as `prompt_tokens_details.cached_tokens`. */
  cached_tokens?: number;
  /** Sent as `completion_tokens_details.reasoning_tokens` (otherwise estimated from the reasoning). */
  reasoning_tokens?: number;
}

/** One tool call of a `toolCalls` step. */
export interface ScriptedToolCall {
  /** Defaults to `call_<n>`. */
  id?: string;
  name: string;
  /** An object is sent as its JSON; a string is sent as is (so it may be invalid JSON on purpose). */
  arguments: string | Record<string, unknown>;
  /** Fragments the arguments string is split into, one delta each (default 3). */
  argumentChunks?: number;
}

/**
 * A scripted response, consumed by one POST /v1/chat/completions.
 *
 * Text may be given as one string (streamed a word per delta) or as the exact deltas (an array).
 * `delayMs` waits that long before each streamed chunk (server side: the tests never sleep).
 */
export type ScriptStep =
  /** A streamed reply: optional `reasoning_content` deltas, then content deltas, `finish_reason` (default `stop`), usage, `[DONE]`. */
  | {
      kind: 'text';
      text: string | string[];
      reasoning?: string | string[];
      finishReason?: 'stop' | 'length' | 'content_filter';
      usage?: UsageOverride;
      delayMs?: number;
    }
  /** Tool calls streamed the real way (one after another, arguments in fragments), after optional text; `finish_reason: 'tool_calls'`. */
  | { kind: 'toolCalls'; calls: ScriptedToolCall[]; text?: string | string[]; reasoning?: string | string[]; usage?: UsageOverride; delayMs?: number }
  /** An HTTP error with an OpenAI-style body `{ error: { message, type, param, code } }`; see {@link rateLimited}, {@link contextLengthExceeded}, {@link serverError}. */
  | { kind: 'error'; status: number; message: string; type?: string; code?: string | null; param?: string | null; headers?: Record<string, string> }
  /** Starts the stream, sends `afterChunks` chunks (default 2: the role delta and one text delta), then half an event, then destroys the socket: no finish, no `[DONE]`. `delayMs` also comes before the cut. */
  | { kind: 'cut'; text?: string | string[]; afterChunks?: number; delayMs?: number }
  /** Streaming: sends the headers, the role delta (and a text delta when `text` is given), then waits for the client to disconnect, which is recorded in `aborted`. Non-streaming: sends nothing and waits. */
  | { kind: 'hang'; text?: string };

/** The `error` step (what {@link rateLimited}, {@link contextLengthExceeded} and {@link serverError} build). */
export type ErrorStep = Extract<ScriptStep, { kind: 'error' }>;

/** What the server received, in arrival order. */
export interface RecordedRequest {
  /** 1-based arrival number. */
  index: number;
  method: string;
  /** Path and query, as sent (e.g. `/v1/chat/completions`). */
  path: string;
  /** Lower-cased header names, as node:http gives them (`authorization`, `content-type`, ...). */
  headers: IncomingHttpHeaders;
  /** The body as text ('' when there was none). */
  rawBody: string;
  /** The body parsed as JSON; undefined when empty or not JSON. */
  body: unknown;
  /** The body, when this was a well-formed chat-completions request. */
  chat: ChatCompletionRequest | undefined;
  /** The step that answered it (scripted or default); undefined for anything but an answered chat completion. */
  step: ScriptStep | undefined;
  /** True once the client disconnected before the response was complete (see {@link FakeOpenAI.aborted}). */
  aborted: boolean;
}

/** The parts of a chat-completions request body the server reads; the rest is kept as sent. */
export interface ChatCompletionRequest {
  model?: string;
  messages: ChatMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean } | null;
  tools?: Array<{ type: 'function'; function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean } }>;
  tool_choice?: unknown;
  [key: string]: unknown;
}

/** A message as OpenAI-compatible clients send it. */
export interface ChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: string | Array<{ type: string; text?: string; [key: string]: unknown }> | null;
  reasoning_content?: string;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
  [key: string]: unknown;
}

export interface FakeOpenAIOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** When set, requests must carry `Authorization: Bearer <apiKey>` or get 401. */
  apiKey?: string;
  /** The model id listed by GET /v1/models and reported when a request names none (default `fake-model`). */
  model?: string;
  /** Answers a chat completion when the script queue is empty (default {@link echoReply}). */
  defaultReply?: (request: ChatCompletionRequest) => ScriptStep;
  /** Called as each request arrives (the CLI logs with it). */
  onRequest?: (request: RecordedRequest) => void;
  /**
   * As DeepSeek's and Kimi's thinking modes do: a request whose assistant messages with tool calls,
   * after the last user message (the tool loop under way), lack `reasoning_content` gets a 400.
   */
  requireReasoningContent?: boolean;
}

export interface FakeOpenAI {
  /** Base URL ending in `/v1`, for `createOpenAICompatible({ baseURL })`. */
  readonly url: string;
  readonly port: number;
  /** Every request received, in arrival order (including 401s, 404s and GET /v1/models). */
  readonly requests: readonly RecordedRequest[];
  /** The requests whose client disconnected before the response completed (`cut` steps, which the server ends itself, are not counted). */
  readonly aborted: readonly RecordedRequest[];
  /** Scripted steps not yet consumed. */
  readonly pending: number;
  /** Chat completions being answered now (from arrival until the response closes). */
  readonly inFlight: number;
  /** The most chat completions answered at once so far. */
  readonly mostInFlight: number;
  /** Queues steps, consumed one per POST /v1/chat/completions in order. */
  script(...steps: ScriptStep[]): void;
  /** Resolves with the n-th request (1-based) once it has arrived; rejects after `timeoutMs` (default 5000). */
  waitForRequest(n: number, timeoutMs?: number): Promise<RecordedRequest>;
  /** Resolves with the n-th aborted request once there are n; rejects after `timeoutMs` (default 5000). */
  waitForAborted(n: number, timeoutMs?: number): Promise<RecordedRequest>;
  /** Stops listening and drops open connections (hanging requests included). */
  close(): Promise<void>;
}

/** A crude token estimate: one token per four characters, rounded up. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** A 429 as OpenAI sends it, with `Retry-After` in seconds (and `retry-after-ms` when `retryAfterMs` is given). */
export function rateLimited(options: { retryAfterSeconds?: number; retryAfterMs?: number; message?: string } = {}): ErrorStep {
  const headers: Record<string, string> = {};
  if (options.retryAfterSeconds !== undefined) headers['retry-after'] = String(options.retryAfterSeconds);
  if (options.retryAfterMs !== undefined) headers['retry-after-ms'] = String(options.retryAfterMs);
  return {
    kind: 'error',
    status: 429,
    message: options.message ?? 'Rate limit reached for requests. Please try again later.',
    type: 'requests',
    code: 'rate_limit_exceeded',
    headers,
  };
}

/** The 400 an OpenAI-compatible server sends when the conversation does not fit the model's context window. */
export function contextLengthExceeded(options: { maxTokens?: number; requestedTokens?: number } = {}): ErrorStep {
  const max = options.maxTokens ?? 8192;
  const requested = options.requestedTokens ?? max + 1;
  return {
    kind: 'error',
    status: 400,
    message: `This model's maximum context length is ${max} tokens. However, your messages resulted in ${requested} tokens. Please reduce the length of the messages.`,
    type: 'invalid_request_error',
    param: 'messages',
    code: 'context_length_exceeded',
  };
}

/** A 500 as OpenAI sends it. */
export function serverError(message = 'The server had an error while processing your request. Sorry about that!'): ErrorStep {
  return { kind: 'error', status: 500, message, type: 'server_error', code: null };
}

/** The text of a message's content (string content, or the text parts of an array). */
export function messageText(message: ChatMessage | undefined): string {
  const content = message?.content;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (part.type === 'text' && typeof part.text === 'string' ? part.text : '')).join('');
  return '';
}

const CALL_TOOL = /call tool ([A-Za-z0-9_.-]+)\s*(\{[\s\S]*\})?/;

/**
 * The default reply: after a tool result, `echo: tool result: <its content>`; otherwise, if the last
 * user message says `call tool NAME {json}`, that tool call; otherwise `echo: <last user message>`.
 */
export function echoReply(request: ChatCompletionRequest): ScriptStep {
  const last = request.messages[request.messages.length - 1];
  if (last?.role === 'tool') return { kind: 'text', text: `echo: tool result: ${messageText(last)}` };
  const lastUser = [...request.messages].reverse().find((m) => m.role === 'user');
  const text = messageText(lastUser);
  const call = CALL_TOOL.exec(text);
  if (call) {
    const args = call[2] ?? '{}';
    return { kind: 'toolCalls', calls: [{ name: call[1]!, arguments: args }] };
  }
  return { kind: 'text', text: `echo: ${text}` };
}

/** Splits text into word deltas ("a b" -> ["a ", "b"]); an array is taken as the deltas themselves. */
function deltasOf(text: string | string[] | undefined): string[] {
  if (text === undefined) return [];
  if (Array.isArray(text)) return text;
  return text.match(/\S+\s*|\s+/g) ?? [];
}

/** Splits a string into `n` roughly equal non-empty pieces (fewer when it is shorter than n). */
function splitInto(text: string, n: number): string[] {
  const count = Math.max(1, Math.min(n, text.length));
  const size = Math.ceil(text.length / count);
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces.length > 0 ? pieces : [''];
}

function promptText(request: ChatCompletionRequest): string {
  return request.messages.map((m) => messageText(m) + (m.tool_calls ?? []).map((c) => c.function.name + c.function.arguments).join('')).join('\n');
}

type Json = Record<string, unknown>;

/** The reply a text or toolCalls step stands for, shared by the streamed and the JSON forms. */
interface Reply {
  content: string[];
  reasoning: string[];
  toolCalls: Array<{ id: string; name: string; fragments: string[] }>;
  finishReason: string;
  usage: {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    prompt_tokens_details?: { cached_tokens: number };
    completion_tokens_details?: { reasoning_tokens: number };
  };
}

function replyOf(step: Extract<ScriptStep, { kind: 'text' | 'toolCalls' }>, request: ChatCompletionRequest, nextCallId: () => string): Reply {
  const content = deltasOf(step.text);
  const reasoning = deltasOf(step.reasoning);
  const toolCalls =
    step.kind === 'toolCalls'
      ? step.calls.map((call) => {
          const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
          return { id: call.id ?? nextCallId(), name: call.name, fragments: splitInto(args, call.argumentChunks ?? 3) };
        })
      : [];
  const reasoningTokens = estimateTokens(reasoning.join(''));
  const output = content.join('') + reasoning.join('') + toolCalls.map((c) => c.name + c.fragments.join('')).join('');
  const prompt = step.usage?.prompt_tokens ?? estimateTokens(promptText(request));
  const completion = step.usage?.completion_tokens ?? estimateTokens(output);
  return {
    content,
    reasoning,
    toolCalls,
    finishReason: step.kind === 'toolCalls' ? 'tool_calls' : (step.finishReason ?? 'stop'),
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      ...(step.usage?.cached_tokens !== undefined ? { prompt_tokens_details: { cached_tokens: step.usage.cached_tokens } } : {}),
      ...(step.usage?.reasoning_tokens !== undefined || reasoning.length > 0
        ? { completion_tokens_details: { reasoning_tokens: step.usage?.reasoning_tokens ?? reasoningTokens } }
        : {}),
    },
  };
}

/** The SSE chunks of a reply, in order (without `[DONE]`). */
function streamChunks(reply: Reply, chunk: (choice: Json | null, extra?: Json) => Json, includeUsage: boolean): Json[] {
  const delta = (d: Json, finish: string | null = null) => chunk({ index: 0, delta: d, logprobs: null, finish_reason: finish });
  const chunks = [delta({ role: 'assistant', content: '' })];
  for (const r of reply.reasoning) chunks.push(delta({ reasoning_content: r }));
  for (const c of reply.content) chunks.push(delta({ content: c }));
  reply.toolCalls.forEach((call, index) => {
    chunks.push(delta({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const fragment of call.fragments) chunks.push(delta({ tool_calls: [{ index, function: { arguments: fragment } }] }));
  });
  chunks.push(delta({}, reply.finishReason));
  if (includeUsage) chunks.push(chunk(null, { usage: reply.usage }));
  return chunks;
}

/** The non-streaming `chat.completion` body of a reply. */
function completionBody(reply: Reply, base: Json): Json {
  const message: Json = { role: 'assistant', content: reply.content.length > 0 || reply.toolCalls.length === 0 ? reply.content.join('') : null };
  if (reply.reasoning.length > 0) message.reasoning_content = reply.reasoning.join('');
  if (reply.toolCalls.length > 0) {
    message.tool_calls = reply.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.fragments.join('') } }));
  }
  return { ...base, choices: [{ index: 0, message, logprobs: null, finish_reason: reply.finishReason }], usage: reply.usage };
}

function errorBody(message: string, type: string, code: string | null, param: string | null = null) {
  return { error: { message, type, param, code } };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

function isChatRequest(body: unknown): body is ChatCompletionRequest {
  return typeof body === 'object' && body !== null && Array.isArray((body as { messages?: unknown }).messages);
}

/** Starts the server; resolves once it is listening. */
export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const host = options.host ?? '127.0.0.1';
  const modelId = options.model ?? 'fake-model';
  const defaultReply = options.defaultReply ?? echoReply;
  const queue: ScriptStep[] = [];
  const requests: RecordedRequest[] = [];
  const aborted: RecordedRequest[] = [];
  const watchers = new Set<() => void>();
  let completions = 0;
  let callIds = 0;
  let inFlight = 0;
  let mostInFlight = 0;
  let closing = false;

  const notify = () => {
    for (const watch of [...watchers]) watch();
  };

  /** Resolves with `list()[n - 1]` once it exists, re-checking whenever a request arrives or aborts. */
  function waitForNth(list: () => readonly RecordedRequest[], n: number, timeoutMs: number, what: string): Promise<RecordedRequest> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = list()[n - 1];
        if (!found) return;
        cleanup();
        resolve(found);
      };
      const timer = setTimeout(() => {
        cleanup();
        const seen =
          list()
            .map((r) => `#${r.index} ${r.method} ${r.path}`)
            .join(', ') || 'none';
        reject(new Error(`fake-openai: timed out after ${timeoutMs} ms waiting for ${what} #${n}; got ${list().length} (${seen})`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        watchers.delete(check);
      };
      watchers.add(check);
      check();
    });
  }

  /** Waits `ms` on the server side; resolves false at once when the client has gone. */
  function pause(res: ServerResponse, ms: number | undefined): Promise<boolean> {
    if (!ms || ms <= 0) return Promise.resolve(!res.destroyed);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        res.off('close', done);
        resolve(!res.destroyed && !res.writableEnded);
      };
      const timer = setTimeout(done, ms);
      res.once('close', done);
    });
  }

  async function answerChat(res: ServerResponse, record: RecordedRequest, request: ChatCompletionRequest): Promise<void> {
    const step = queue.shift() ?? defaultReply(request);
    record.step = step;
    const id = `chatcmpl-fake-${++completions}`;
    const base = (object: string): Json => ({ id, object, created: Math.floor(Date.now() / 1000), model: request.model ?? modelId, system_fingerprint: null });
    const chunk = (choice: Json | null, extra: Json = {}): Json => ({ ...base('chat.completion.chunk'), choices: choice ? [choice] : [], ...extra });
    const stream = request.stream === true;
    const includeUsage = request.stream_options?.include_usage === true;
    const nextCallId = () => `call_fake_${++callIds}`;
    const startStream = () => res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const write = (data: Json | '[DONE]') => res.write(`data: ${data === '[DONE]' ? data : JSON.stringify(data)}\n\n`);

    switch (step.kind) {
      case 'error':
        sendJson(res, step.status, errorBody(step.message, step.type ?? 'invalid_request_error', step.code ?? null, step.param ?? null), step.headers);
        return;
      case 'text':
      case 'toolCalls': {
        const reply = replyOf(step, request, nextCallId);
        if (!stream) return sendJson(res, 200, completionBody(reply, base('chat.completion')));
        startStream();
        for (const c of streamChunks(reply, chunk, includeUsage)) {
          if (!(await pause(res, step.delayMs))) return;
          write(c);
        }
        write('[DONE]');
        res.end();
        return;
      }
      case 'cut': {
        const reply = replyOf({ kind: 'text', text: step.text ?? 'This reply is cut short' }, request, nextCallId);
        const chunks = stream ? streamChunks(reply, chunk, includeUsage).slice(0, step.afterChunks ?? 2) : [];
        if (stream) startStream();
        else res.writeHead(200, { 'content-type': 'application/json' });
        for (const c of chunks) {
          if (!(await pause(res, step.delayMs))) return;
          write(c);
        }
        // Half an event (or half a JSON body), then the socket goes: no finish, no [DONE], no end of the chunked body.
        if (!(await pause(res, step.delayMs))) return;
        res.write(stream ? 'data: {"id":"chatcm' : '{"id":"chatcm', () => res.socket?.destroy());
        return;
      }
      case 'hang': {
        if (stream) {
          startStream();
          write(chunk({ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }));
          if (step.text !== undefined) write(chunk({ index: 0, delta: { content: step.text }, logprobs: null, finish_reason: null }));
        }
        return; // the response stays open (a non-streaming one without even headers) until the client goes, or close()
      }
      default: {
        const unknown: never = step;
        sendJson(res, 500, errorBody(`fake-openai: unknown script step ${JSON.stringify(unknown)}`, 'server_error', null));
      }
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawBody = await readBody(req);
    let body: unknown;
    try {
      body = rawBody === '' ? undefined : JSON.parse(rawBody);
    } catch {
      body = undefined;
    }
    const path = req.url ?? '/';
    const pathname = path.split('?')[0];
    const isChatPath = req.method === 'POST' && pathname === '/v1/chat/completions';
    const record: RecordedRequest = {
      index: requests.length + 1,
      method: req.method ?? 'GET',
      path,
      headers: req.headers,
      rawBody,
      body,
      chat: isChatPath && isChatRequest(body) ? body : undefined,
      step: undefined,
      aborted: false,
    };
    requests.push(record);
    res.on('error', () => {}); // a client that went away must not crash the process hosting the tests
    res.on('close', () => {
      if (closing || res.writableFinished || record.step?.kind === 'cut') return;
      record.aborted = true;
      aborted.push(record);
      notify();
    });
    options.onRequest?.(record);
    notify();

    if (options.apiKey !== undefined) {
      const auth = req.headers.authorization;
      if (auth === undefined) {
        return sendJson(
          res,
          401,
          errorBody(
            "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
            'invalid_request_error',
            null,
          ),
        );
      }
      if (auth !== `Bearer ${options.apiKey}`) {
        const given = auth.replace(/^Bearer\s+/i, '');
        const masked = given.length > 4 ? `${given.slice(0, 2)}***${given.slice(-2)}` : '***';
        return sendJson(
          res,
          401,
          errorBody(`Incorrect API key provided: ${masked}. This fake server expects the key it was started with.`, 'invalid_request_error', 'invalid_api_key'),
        );
      }
    }

    if (req.method === 'GET' && pathname === '/v1/models') {
      return sendJson(res, 200, { object: 'list', data: [{ id: modelId, object: 'model', created: 0, owned_by: 'sessiond-fake' }] });
    }
    if (isChatPath) {
      if (rawBody !== '' && body === undefined) {
        return sendJson(
          res,
          400,
          errorBody(
            "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)",
            'invalid_request_error',
            null,
          ),
        );
      }
      if (!record.chat) {
        return sendJson(res, 400, errorBody("'messages' is a required property (an array of messages)", 'invalid_request_error', null, 'messages'));
      }
      if (options.requireReasoningContent && missesReasoning(record.chat.messages)) {
        return sendJson(
          res,
          400,
          errorBody(
            'Missing `reasoning_content` field in the assistant message at message index 2. The reasoning_content in the thinking mode must be passed back to the API.',
            'invalid_request_error',
            'invalid_request_error',
          ),
        );
      }
      inFlight++;
      mostInFlight = Math.max(mostInFlight, inFlight);
      res.once('close', () => inFlight--);
      return answerChat(res, record, record.chat);
    }
    return sendJson(
      res,
      404,
      errorBody(
        `Unknown request URL: ${req.method} ${path}. This fake OpenAI-compatible server serves POST /v1/chat/completions and GET /v1/models.`,
        'invalid_request_error',
        'unknown_url',
      ),
    );
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, errorBody(`fake-openai: ${String(err)}`, 'server_error', null));
      else res.destroy();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'EADDRINUSE' ? new Error(`fake-openai: ${host}:${options.port} is already in use (use port 0 for a free one)`) : err);
    });
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}/v1`;

  return {
    url,
    port,
    requests,
    aborted,
    get inFlight() {
      return inFlight;
    },
    get mostInFlight() {
      return mostInFlight;
    },
    get pending() {
      return queue.length;
    },
    script(...steps) {
      queue.push(...steps);
    },
    waitForRequest: (n, timeoutMs = 5000) => waitForNth(() => requests, n, timeoutMs, 'request'),
    waitForAborted: (n, timeoutMs = 5000) => waitForNth(() => aborted, n, timeoutMs, 'aborted request'),
    close() {
      closing = true;
      return new Promise((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      });
    },
  };
}

/** Whether an assistant message with tool calls after the last user message has no `reasoning_content`. */
function missesReasoning(messages: readonly ChatMessage[]): boolean {
  let lastUser = -1;
  messages.forEach((m, i) => {
    if (m.role === 'user') lastUser = i;
  });
  return messages.slice(lastUser + 1).some((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0 && !m.reasoning_content);
}
