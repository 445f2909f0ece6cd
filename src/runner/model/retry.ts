/**
 * What to do with a failed model request (pure): retry 429, 408, 409, 5xx, network failures and errors
 * a proxy names retryable (backoff with full jitter, honouring `retry-after(-ms)` or the wait a message
 * names), compact a context overflow, fail any other 4xx. Which signals count:
 * docs/model-runner.md#the-model-runner---runner-openai.
 */
import { APICallError } from 'ai';
import { SessiondError, ErrorCode, type ModelFailure } from '../../errors.ts';

export interface RetryPolicy {
  /** Attempts per request, the first included (default 5). */
  maxAttempts: number;
  /** The first backoff (default 500 ms); doubled per attempt, with full jitter. */
  baseDelayMs: number;
  /** The longest backoff between attempts (default 30 s). A server's Retry-After is honoured whatever its length. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 5, baseDelayMs: 500, maxDelayMs: 30_000 };

/** How a failed request is handled (the type lives with `ModelRequestError` in src/errors.ts). */
export type Failure = ModelFailure;

const RETRYABLE_STATUS = new Set([408, 409, 429]);
const OVERFLOW =
  /context_length_exceeded|context_window_exceeded|ContextWindowExceeded|maximum context length|maximum context limit|context length|context window|exceed context limit|exceed the configured limit|too many (input )?tokens|prompt is too long|input is too long|exceeds the maximum number of tokens/i;
/** Exception and type names proxies keep for failures worth another attempt (whatever status they rewrote). */
const RETRYABLE_NAME = /RateLimitError|rate_limit_exceeded|ServiceUnavailableError|InternalServerError|APIConnectionError|\bTimeout\b|overloaded_error/;

/** Classifies an error from the model client. */
export function classify(err: unknown, now: number): Failure {
  if (APICallError.isInstance(err)) {
    const status = err.statusCode;
    const message = serverMessage(err);
    const signals = `${err.responseBody ?? ''}\n${message}`; // code, type, exception names and wording
    if (status !== undefined && status >= 400 && status < 500 && OVERFLOW.test(signals)) return { kind: 'overflow', message };
    // a stream cut after the response started is an APICallError with status 200 that the client marks retryable
    if (err.isRetryable || status === undefined || RETRYABLE_STATUS.has(status) || status >= 500 || RETRYABLE_NAME.test(signals))
      return { kind: 'retry', status, message, retryAfterMs: retryAfter(err.responseHeaders, now) ?? waitNamedIn(message) };
    return { kind: 'fatal', status, message };
  }
  const message = messageOfUnknown(err);
  return { kind: 'retry', status: undefined, message, retryAfterMs: undefined }; // a network failure or a stream cut
}

/** How long to wait before attempt `attempt + 1` (attempt counts from 1), or undefined when no attempt is left. */
export function backoff(
  policy: RetryPolicy,
  attempt: number,
  failure: Extract<Failure, { kind: 'retry' }>,
  random: () => number = Math.random,
): number | undefined {
  if (attempt >= policy.maxAttempts) return undefined;
  // the server said when: sooner would only be refused again (a cancel or the turn's deadline still ends the wait)
  if (failure.retryAfterMs !== undefined) return Math.max(0, failure.retryAfterMs);
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(ceiling * (0.5 + random() * 0.5));
}

/**
 * A retry in plain words, for the worker's log (`attempt`: the attempt that failed):
 * `model request failed: 429 Rate limit reached (HTTP 429); sending it again in 1.2 s (attempt 2)`.
 */
export function describeRetry(r: { attempt: number; delayMs: number; error: { name?: string | undefined; message: string } }): string {
  const wait = r.delayMs < 1_000 ? `${Math.round(r.delayMs)} ms` : `${(r.delayMs / 1_000).toFixed(1)} s`;
  const name = r.error.name ? ` (${r.error.name})` : '';
  return `model request failed: ${r.error.message}${name}; sending it again in ${wait} (attempt ${r.attempt + 1})`;
}

/** Checks a retry policy (unknown keys refused), filling defaults. */
export function parseRetryPolicy(input: Partial<RetryPolicy> = {}): RetryPolicy {
  for (const key of Object.keys(input)) {
    if (!(key in DEFAULT_RETRY)) throw new SessiondError(ErrorCode.InvalidOption, `Unknown retry option "${key}": use maxAttempts, baseDelayMs or maxDelayMs.`);
  }
  const policy = { ...DEFAULT_RETRY, ...input };
  for (const [key, value] of Object.entries(policy)) {
    if (!Number.isInteger(value) || value < (key === 'maxAttempts' ? 1 : 0)) {
      throw new SessiondError(
        ErrorCode.InvalidOption,
        `Invalid retry option ${key}=${String(value)}: use a whole number${key === 'maxAttempts' ? ' >= 1' : ' of milliseconds >= 0'}.`,
      );
    }
  }
  return policy;
}

/** The server's own words: the `error.message` of an OpenAI-style body, else the client's message. */
export function serverMessage(err: APICallError): string {
  try {
    const body = JSON.parse(err.responseBody ?? '') as { error?: { message?: unknown; code?: unknown } };
    const m = body.error?.message;
    if (typeof m === 'string' && m.length > 0) return `${err.statusCode ?? ''} ${m}`.trim();
  } catch {
    /* not JSON: the client's message */
  }
  return err.message;
}

function retryAfter(headers: Record<string, string> | undefined, now: number): number | undefined {
  if (!headers) return undefined;
  const get = (name: string) => Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
  const ms = Number(get('retry-after-ms'));
  if (Number.isFinite(ms) && ms >= 0 && get('retry-after-ms') !== undefined) return ms;
  const value = get('retry-after');
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

const UNIT_MS: Record<string, number> = {
  ms: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1000,
  sec: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  minute: 60_000,
  minutes: 60_000,
};

/**
 * The wait a message names when a proxy kept the words but not the header: "Please try again in
 * 3s", "try again in 1.5 seconds", "retry after 20ms", "Try again in 1m30s" (undefined when none).
 */
export function waitNamedIn(message: string): number | undefined {
  const m = /\b(?:try again|retry)\s+(?:in|after)\s+((?:\d+(?:\.\d+)?\s*(?:ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)(?![a-z])\s*)+)/i.exec(message);
  if (!m) return undefined;
  let ms = 0;
  for (const [, n, unit] of m[1]!.matchAll(/(\d+(?:\.\d+)?)\s*([a-z]+)/gi))
    ms += Number(n) * (UNIT_MS[unit!.toLowerCase()] ?? UNIT_MS[unit!.toLowerCase().replace(/s$/, '')] ?? 0);
  return Number.isFinite(ms) ? Math.round(ms) : undefined;
}

function messageOfUnknown(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return `${err.message}${cause}`;
  }
  return String(err);
}
