/**
 * The runner contract: an async function that does one turn of a session. It receives the turn's
 * promoted inputs, an AbortSignal, and a handle whose every write goes through the fenced append.
 * When the handle throws `ClaimLostError` (lease lost) or the signal aborts (cancelled, shutting
 * down), the runner must stop: nothing it writes afterwards is accepted.
 *
 * Durability: the handle appends when an external effect is about to happen, not on every call.
 * Durable before they return: `tool()`'s journal (before `fn` runs), `phase('unknown')` (before a
 * model request), `compact()`'s start (before the summary is asked for), `flush()`. Everything else
 * is buffered in order and rides with the next durable write or the turn's settlement; a refusal of
 * a buffered write surfaces at that next durable write.
 */
import type { Delivery, ExecutionPhase, RecordedError } from '../events/catalog.ts';
import type { Clock } from '../clock.ts';

export interface RunInput {
  inputId: string;
  prompt: string;
  delivery: Delivery;
}

export interface ToolCall {
  name: string;
  input: unknown;
  /** A durable tool gets a stable idempotency key so a retried side effect can be deduplicated. */
  durable?: boolean;
  callId?: string;
}

export interface ToolContext {
  callId: string;
  idempotencyKey: string | undefined;
  signal: AbortSignal;
}

export interface RunContext {
  readonly sessionId: string;
  readonly executionId: string;
  readonly ownerId: string;
  /** Inputs promoted into this turn, in admission order (steering inputs may join later). */
  readonly inputs: readonly RunInput[];
  readonly signal: AbortSignal;
  readonly clock: Clock;

  /** Starts an assistant step (a model call); at this boundary pending steering inputs join the turn. */
  startStep(): Promise<{ messageId: string; steered: RunInput[] }>;
  /** Streams a piece of text: live-only, never stored. */
  delta(messageId: string, partId: string, text: string): void;
  /** Records a text part's final content (buffered). */
  text(messageId: string, text: string, partId?: string): Promise<string>;
  endStep(messageId: string, finish?: string): Promise<void>;
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
  /** Runs a compaction step after a context overflow: the summary is recorded, then the turn continues. */
  compact(reason: string, summarize: () => Promise<string>): Promise<string>;
}

export type Runner = (ctx: RunContext) => Promise<void>;
