/**
 * Test fixtures: event builders typed from the catalog (defaults under the given fields, never
 * validated) and the one error assertion. Why: docs/testing.md#fixtures.
 *
 *   ev('execution.claimed', { ownerId: 'own_b' });   // { type, payload }: what a decision emits
 */
import * as assert from 'uvu/assert';
import { catalog, type EventType, type PayloadInputOf } from '../events/catalog.ts';
import type { DraftEvent, SessionEvent } from '../events/envelope.ts';
import type { LiveEvent } from '../events/live-bus.ts';
import { isSessiondError, type ErrorCode, type SessiondError } from '../errors.ts';

/** An event without its envelope: a type and its payload (what the machine decides). */
export type Proto<T extends EventType = EventType> = { [K in T]: { type: K; payload: PayloadInputOf<K> } }[T];

const error = { type: 'model', message: 'failed' };
const step = { executionId: 'exe_1', messageId: 'msg_1' };

/** A valid payload of every type (its required fields), which `ev` fills in. */
export const defaultPayloads: { readonly [K in EventType]: PayloadInputOf<K> } = {
  'execution.claimed': { executionId: 'exe_1', ownerId: 'own_a', expiresAt: 30_000, leaseMs: 30_000, assistantSeq: -1 },
  'execution.renewed': { executionId: 'exe_1', expiresAt: 60_000 },
  'execution.started': { executionId: 'exe_1' },
  'execution.phase': { executionId: 'exe_1', phase: 'unknown' },
  'execution.cancelled': { executionId: 'exe_1' },
  'execution.settled': { executionId: 'exe_1', outcome: 'succeeded' },
  'input.admitted': { inputId: 'inp_1', prompt: 'p', delivery: 'queue', wake: true },
  'input.promoted': { inputId: 'inp_1', executionId: 'exe_1' },
  'input.dropped': { inputIds: ['inp_1'] },
  'session.forked': { from: { sessionId: 'ses_source', seq: 3 }, transcript: [] },
  'step.started': { ...step, step: 0 },
  'step.ended': { ...step, finish: 'stop' },
  'step.failed': { ...step, error },
  'step.recovered': { ...step, reason: 'expired' },
  'text.delta': { ...step, partId: 'prt_1', delta: 'x' },
  'text.streamed': { ...step, partId: 'prt_1', text: 'te', restart: true },
  'text.completed': { ...step, partId: 'prt_1', text: 'text' },
  'reasoning.delta': { ...step, partId: 'prt_1', delta: 'x' },
  'reasoning.completed': { ...step, partId: 'prt_1', text: 'thought' },
  'model.retry_scheduled': { ...step, attempt: 1, delayMs: 1_000, error },
  'tool.progressed': { ...step, callId: 'call_1', progress: 3, total: 10, message: 'page 3 of 10' },
  'tool.called': { ...step, callId: 'call_1', name: 'search', input: {}, durable: false, started: false },
  'tool.started': { ...step, callId: 'call_1' },
  'tool.succeeded': { ...step, callId: 'call_1', output: null },
  'tool.failed': { ...step, callId: 'call_1', error },
  'wait.started': { executionId: 'exe_1', kind: 'signal', name: 'payment' },
  'wait.resolved': { executionId: 'exe_1', kind: 'signal', name: 'payment', outcome: 'delivered' },
  'compaction.started': { ...step, reason: 'overflow' },
  'compaction.completed': { ...step, summary: 'summary' },
  'session.tagged': { tags: { customer: 'acme' } },
  'budget.set': { tokens: 1000, costUsd: null, reset: true },
  'turn.interrupted': {
    executionId: 'exe_1',
    ownerId: 'own_a',
    reason: 'lease_expired',
    messageId: 'msg_1',
    recorded: [],
    continuationInputId: 'inp_cont_exe_1',
  },
  'recovery.started': { executionId: 'exe_1' },
  'recovery.completed': { executionId: 'exe_1', assistantMessageId: null, continuationInputId: null, phase: 'safe' },
  'recovery.wake_requested': { executionId: 'exe_1', attempt: 1 },
  'recovery.wake_delivered': { executionId: 'exe_1', byExecutionId: 'exe_2' },
  'recovery.wake_failed': { executionId: 'exe_1', attempt: 1, error, parked: false },
};

/** An event of `type`: the given payload fields (in their order), then the defaults for the rest. */
export function ev<T extends EventType>(type: T, payload: Partial<PayloadInputOf<T>> = {}): Proto<T> {
  const out: Record<string, unknown> = { ...payload };
  for (const [key, value] of Object.entries(defaultPayloads[type])) if (!(key in out)) out[key] = value;
  return { type, payload: out } as Proto<T>;
}

let unique = 0;
/** `<prefix>_<pid>_<time>_<n>`: an id no other process makes (for logs on a shared server). */
export function uniqueId(prefix: string): string {
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${++unique}`;
}

let drafted = 0;
/** An event to append: `id` (default a `uniqueId('evt')`) and `time` (default 1000 + n: each draft later than the one before). */
export function draft<T extends EventType>(event: Proto<T>, options: { id?: string; time?: number } = {}): DraftEvent<T> {
  drafted++;
  return { id: options.id ?? uniqueId('evt'), type: event.type, time: options.time ?? 1_000 + drafted, payload: event.payload } as DraftEvent<T>;
}

export interface Stamp {
  sessionId: string;
  seq: number;
  /** Default `evt_<sessionId>_<seq>`. */
  id?: string;
  /** Default 1000 * seq. */
  time?: number;
  position?: number;
  committedAt?: number;
}

/** A committed event, as a log hands it back (version: the catalog's; `position`, `committedAt` only when given). */
export function committed<T extends EventType>(event: Proto<T>, at: Stamp): SessionEvent<T> {
  return {
    id: at.id ?? `evt_${at.sessionId}_${at.seq}`,
    type: event.type,
    version: catalog[event.type].version,
    sessionId: at.sessionId,
    seq: at.seq,
    time: at.time ?? 1_000 * at.seq,
    payload: event.payload,
    ...(at.position === undefined ? {} : { position: at.position }),
    ...(at.committedAt === undefined ? {} : { committedAt: at.committedAt }),
  } as SessionEvent<T>;
}

/** An event as the live bus publishes it (`seq` only for a committed one). */
export function live<T extends EventType>(event: Proto<T>, at: { id: string; sessionId: string; time: number; seq?: number }): LiveEvent<T> {
  return {
    id: at.id,
    type: event.type,
    sessionId: at.sessionId,
    time: at.time,
    payload: event.payload,
    ...(at.seq === undefined ? {} : { seq: at.seq }),
  } as LiveEvent<T>;
}

export interface StreamOptions {
  /** Default 1000 * position. */
  time?: number;
  committedAt?: number;
  /** Default `evt_<position>`. */
  id?: string;
}

/**
 * Committed events numbered as a log would: each event the next seq of its session and the next
 * global position, id `evt_<position>`, time 1000 * position unless given. Build a whole stream
 * first, then apply it in any batches.
 */
export function stream() {
  let position = 0;
  const seqs = new Map<string, number>();
  /** `event` committed as the next event of `sessionId`. */
  function commit<T extends EventType>(sessionId: string, event: Proto<T>, options: StreamOptions = {}): SessionEvent<T> {
    const seq = (seqs.get(sessionId) ?? 0) + 1;
    seqs.set(sessionId, seq);
    position++;
    return committed(event, {
      sessionId,
      seq,
      position,
      id: options.id ?? `evt_${position}`,
      time: options.time ?? 1_000 * position,
      ...(options.committedAt === undefined ? {} : { committedAt: options.committedAt }),
    });
  }
  return {
    commit,
    /** The next event of `sessionId`: `ev(type, payload)` committed. */
    ev<T extends EventType>(sessionId: string, type: T, payload?: Partial<PayloadInputOf<T>>, options?: StreamOptions): SessionEvent<T> {
      return commit(sessionId, ev(type, payload), options);
    },
    /** The same stream, for one session. */
    session(sessionId: string) {
      return {
        ev: <T extends EventType>(type: T, payload?: Partial<PayloadInputOf<T>>, options?: StreamOptions): SessionEvent<T> =>
          commit(sessionId, ev(type, payload), options),
      };
    },
  };
}
export type Stream = ReturnType<typeof stream>;

/** One session of a fresh stream: `session('ses_a').ev('input.admitted')` is seq 1. */
export function session(sessionId: string) {
  return stream().session(sessionId);
}

/**
 * Asserts that `action` fails with a SessiondError of `code` whose message includes
 * `messageIncludes`, and returns the error. `action` is a function (called; a promise it returns is
 * awaited) or a promise: a synchronous failure gives the error, an asynchronous one a promise of it.
 */
export function expectCode<E extends SessiondError = SessiondError>(
  action: PromiseLike<unknown> | (() => PromiseLike<unknown>),
  code: ErrorCode,
  messageIncludes?: string,
): Promise<E>;
export function expectCode<E extends SessiondError = SessiondError>(action: () => unknown, code: ErrorCode, messageIncludes?: string): E;
export function expectCode(action: PromiseLike<unknown> | (() => unknown), code: ErrorCode, messageIncludes?: string): SessiondError | Promise<SessiondError> {
  let result: unknown;
  try {
    result = typeof action === 'function' ? action() : action;
  } catch (err) {
    return checkCode(err, code, messageIncludes);
  }
  if (isThenable(result)) {
    return Promise.resolve(result).then(
      () => {
        throw notThrown(code, 'resolved');
      },
      (err: unknown) => checkCode(err, code, messageIncludes),
    );
  }
  throw notThrown(code, 'returned');
}

function checkCode(err: unknown, code: ErrorCode, messageIncludes: string | undefined): SessiondError {
  const message = err instanceof Error ? err.message : String(err);
  assert.ok(
    isSessiondError(err, code),
    `expected a SessiondError ${code}, got ${isSessiondError(err) ? err.code : String((err as Error)?.name ?? err)}: ${message}`,
  );
  if (messageIncludes !== undefined) assert.ok(message.includes(messageIncludes), `message "${message}" should include "${messageIncludes}"`);
  return err as SessiondError;
}

function notThrown(code: ErrorCode, how: string): assert.Assertion {
  return new assert.Assertion({ message: `expected a SessiondError ${code}, but it ${how}`, operator: 'throws', actual: how, expects: code, generated: true });
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function';
}
