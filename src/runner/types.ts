/**
 * The runner contract: an async function for one turn of a session, given its promoted inputs, an
 * AbortSignal and a handle whose writes are fenced appends at the durability boundary; on
 * `ClaimLostError` or an abort it must stop (why: docs/model-runner.md#runners).
 */
import type { Continuation, Delivery, ExecutionPhase, Prompt, PromptPart, RecordedError, Usage } from '../events/catalog.ts';
import type { Tags } from '../events/tags.ts';
import type { TranscriptItem } from '../events/transcript.ts';
import type { Clock } from '../clock.ts';
import type { BlobRef } from '../blobs/blob-store.ts';
import type { Wait } from '../machines/session-context.ts';

export interface RunInput {
  inputId: string;
  /** The prompt as text (a prompt of parts: text parts joined by newlines, JSON as its text, images and files as notes; see `parts`). */
  prompt: string;
  /** A prompt of parts (text, images, files, JSON) as it was admitted; absent for a string prompt. */
  parts?: PromptPart[];
  delivery: Delivery;
  /** `recovery` for the continuation of an interrupted or handed-back turn. */
  source: 'user' | 'recovery';
  /** On a continuation: the execution it takes over, that execution's inputs, its partial answer and the durable tool calls to retry. */
  continues?: Continuation;
}

export interface ToolCall {
  name: string;
  input: unknown;
  /** A durable tool gets a stable idempotency key so a retried side effect can be deduplicated. */
  durable?: boolean;
  callId?: string;
  /** A durable call retried from a continuation keeps the interrupted call's key (default: a key of this session, execution and call). */
  idempotencyKey?: string;
}

export interface ToolContext {
  callId: string;
  idempotencyKey: string | undefined;
  signal: AbortSignal;
  /**
   * Reports how far the call got: goes out live (`tool.progressed`: subscribers, the gateway's
   * streams, the inspector), at most one every 100 ms per call (the latest wins), never stored.
   */
  progress(update: ToolProgress): void;
}

/** A tool's progress: `progress` counts up (a float), out of `total` when known, with an optional message. */
export interface ToolProgress {
  progress: number;
  total?: number;
  message?: string;
}

/** What `waitFor` returns: the value delivered (`sessiond resolve`, `engine.resolve`), or that its time ran out. */
export type SignalResult<T = unknown> = { outcome: 'delivered'; data: T } | { outcome: 'timed_out' };

/** What `callSession` admits into another session (the child), and how long it waits for the child's turn. */
export interface SessionCall {
  /** The child session (created by this admission when it has no events). */
  sessionId: string;
  /** The child's prompt: a string or parts, as `admit` takes. */
  prompt: Prompt;
  /** End the wait `timed_out` after this many ms (the child's turn goes on). */
  timeoutMs?: number;
  /** Tags for the child session (as `admit` takes). */
  tags?: Tags;
  /**
   * The call is a model's tool call of this turn (a session tool, `defineSessionTool`): it is recorded
   * as that call (`tool.called`, durable, keyed by the call's name, appended before the child is
   * admitted; then waiting on the child), and when the child's end comes back its
   * answer is recorded as the call's result, once (`tool.started`, then `tool.succeeded` with the
   * child's answer, or `tool.failed` saying how the child's turn ended). A refused call is recorded
   * as the call's failure too.
   */
  asToolCall?: { messageId: string; callId: string; tool: string; input: unknown };
}

/** How a child's turn ended, as `callSession` returns it: its outcome and its final answer. */
export interface SessionCallResult {
  /** `timed_out`: the call's `timeoutMs` passed first (the child's turn was not waited for). */
  outcome: 'succeeded' | 'failed' | 'cancelled' | 'timed_out';
  /** The child's final answer: the text of its turn's last step with text ('' when none). */
  text: string;
  sessionId: string;
  /** The input admitted into the child (derived from this turn and the call's name). */
  inputId: string;
  /** The child's execution that ended its turn (absent when timed out). */
  executionId?: string;
  /** Why a failed or cancelled child's turn ended. */
  error?: string;
}

/** A call to ask a person about before it runs (`requestApproval`). */
export interface ApprovalCall {
  name: string;
  input: unknown;
  callId?: string;
  /** The approved call runs with an idempotency key (as a durable tool does). */
  durable?: boolean;
}

export interface RunContext {
  readonly sessionId: string;
  readonly executionId: string;
  readonly ownerId: string;
  /** Inputs promoted into this turn, in admission order (steering inputs may join later). */
  readonly inputs: readonly RunInput[];
  readonly signal: AbortSignal;
  readonly clock: Clock;

  /**
   * Starts an assistant step (a model call); at this boundary pending steering inputs join the turn.
   * It is also the budget boundary: when the session (or its tenant) has spent its budget, the turn
   * stops here with `BudgetExceededError` (let it through) and settles failed `budget_exceeded`.
   */
  startStep(): Promise<{ messageId: string; steered: RunInput[] }>;
  /**
   * The session's conversation as committed: earlier turns, this turn's prompts, and what this turn
   * wrote (what is buffered is appended first). Folded from the log, reading only the events since
   * the last call; a compaction's summary replaces what it summarized (see src/events/transcript.ts).
   */
  history(): Promise<readonly TranscriptItem[]>;
  /**
   * The bytes of a blob a prompt part references (`{ type: 'image', blob: { sha256, size, mediaType } }`),
   * checked against its hash: large parts are stored beside the log, and a runner that sends them to
   * a model reads them here (the model runner does: src/runner/model/blob-parts.ts).
   */
  blob(ref: BlobRef): Promise<Uint8Array>;
  /** Streams a piece of text (or of reasoning): live-only, never stored. */
  delta(messageId: string, partId: string, text: string, kind?: 'text' | 'reasoning'): void;
  /** Records a text part's final content (buffered). */
  text(messageId: string, text: string, partId?: string): Promise<string>;
  /** Records a reasoning part's final content, where the model sends reasoning (buffered). */
  reasoning(messageId: string, text: string, partId?: string): Promise<string>;
  /** Says, live, that a model request failed and is sent again after `delayMs` (never stored). */
  retrying(messageId: string, attempt: number, delayMs: number, error: RecordedError): void;
  /**
   * Ends the step; `usage` is the tokens it used, as the model server reported them. `model` (the
   * model's id) prices the call where the worker has a price table: its cost is recorded with it.
   */
  endStep(messageId: string, finish?: string, usage?: Usage, model?: string): Promise<void>;
  failStep(messageId: string, error: RecordedError): Promise<void>;
  /**
   * Marks the execution `unknown` before an external effect (model request): recovery must not
   * blindly replay it. `unknown` is a durability boundary: it and everything buffered before it are
   * appended before it returns (also when the phase is already `unknown`). Other phases are buffered.
   */
  phase(phase: ExecutionPhase): Promise<void>;
  /** Appends everything buffered now and waits until it is durable (before an effect the handle does not see). */
  flush(): Promise<void>;
  /** Journals the call durably, runs `fn`, records the result (or the error, buffered) and returns it. */
  tool<T>(messageId: string, call: ToolCall, fn: (ctx: ToolContext) => Promise<T>): Promise<T>;
  /**
   * Room for one model request under the deployment's limits on model calls (`--max-model-calls`,
   * `--limits FILE`; src/capacity/): resolves at once when no limit applies, else waits (holding only
   * the turn's own lease) until every limit the call draws from has a free slot, served fairly between
   * tenants. Call `release()` when the request has ended, whatever its end, and `throttled()` first
   * when the provider answered 429: the whole fleet then backs off from that provider.
   * `input`: what the request sends, by the GenAI conventions, called only when traces record
   * contents (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`).
   */
  modelCall(call: { provider: string; model: string; input?: () => ModelInput }): Promise<ModelCallSlot>;
  /**
   * Runs a compaction step after a context overflow: its start is durable before `summarize` (a model
   * call) runs; the summary (and the tokens the call used) is recorded, then the turn continues.
   * In the transcript the summary replaces every earlier item but this turn's prompts.
   */
  compact(reason: string, summarize: () => Promise<string | { summary: string; usage?: Usage; model?: string }>): Promise<string>;

  /**
   * The turn's waits, as they stood when this execution started: across the turn's executions (a
   * turn that waited and resumed sees what came), open ones and resolved ones.
   */
  readonly waits: readonly Wait[];
  /**
   * Records a tool call that waits for a person (`tool.called`, not started, and `wait.started`;
   * buffered): it does not run now. When the runner returns, the turn settles `waiting`, holding
   * nothing; `sessiond approve|deny` decide, and the turn resumes in a new execution, where
   * `waits` has the decision and `runApproved` runs an approved call. Returns the call id.
   */
  requestApproval(messageId: string, call: ApprovalCall): Promise<string>;
  /**
   * Runs a call a person approved (one of `waits`, kind `approval`, outcome `approved`): `tool.started`
   * on its original message is durable before `fn` runs (never twice: a second start is refused),
   * then its result is recorded as `tool()` does.
   */
  runApproved<T>(callId: string, fn: (ctx: ToolContext) => Promise<T>): Promise<T>;
  /**
   * Waits for a value named `name` from outside (`sessiond resolve SESSION NAME --data JSON`), or
   * until `timeoutMs`. When it has not come, the wait is recorded and the execution ends (this
   * throws `WaitingError`: let it through); the turn resumes when it comes, running the runner again
   * from the top, and this call then returns it. A runner that waits must do the same things again
   * up to its waits (names are the turn's keys: the same name returns the same value).
   */
  waitFor<T = unknown>(name: string, options?: { timeoutMs?: number }): Promise<SignalResult<T>>;
  /**
   * A durable timer: the execution ends (`WaitingError`) and the turn resumes after `ms`, holding
   * nothing meanwhile; run again, the n-th `sleep` of the turn returns at once once it has elapsed.
   */
  sleep(ms: number): Promise<void>;
  /**
   * Runs a prompt in another session and waits for its turn's answer, holding nothing: the prompt is
   * admitted into `call.sessionId` (once per turn and `name`, whatever restarts), the execution ends
   * (`WaitingError`: let it through) and the turn settles `waiting`; when the child's turn ends the
   * recovery sweep delivers it and this turn runs again, where the call with the same name returns
   * it. Calls started together (`Promise.all`) are one wait for all. A call into this session, or
   * into one that waits (through others) on it, is refused naming the chain.
   */
  callSession(name: string, call: SessionCall): Promise<SessionCallResult>;
}

/**
 * What a model request sends, as OpenTelemetry's GenAI conventions record it on a `chat` span
 * (`gen_ai.system_instructions`, `gen_ai.input.messages`): messages of a role and typed parts
 * (`{ type: 'text', content }`, `{ type: 'tool_call', id, name, arguments }`,
 * `{ type: 'tool_call_response', id, response }`, `{ type: 'reasoning', content }`).
 */
export interface ModelInput {
  system?: string;
  messages: { role: string; parts: Record<string, unknown>[] }[];
}

/** A model request's room under the deployment's limits (`RunContext.modelCall`). */
export interface ModelCallSlot {
  /** The request ended (any way): the slot goes to the next call waiting. Idempotent. */
  release(): Promise<void>;
  /** The provider answered 429 or said it is overloaded (`retryAfterMs`: its Retry-After): every worker backs off from it. */
  throttled(retryAfterMs: number | undefined): Promise<void>;
}

export type Runner = (ctx: RunContext) => Promise<void>;
