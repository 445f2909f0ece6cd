/**
 * `SessiondError`, the one error class sessiond raises on purpose, with a stable `code` from
 * `ErrorCode` (match on it, never on the message), and every error class that leaves its module
 * (`CommandError` stays in nats/command-protocol.ts). Imports types only, so the NATS client never loads the
 * machines, SQLite or xstate through it.
 */
import type { RecordedError } from './events/catalog.ts';
import type { SessionEvent } from './events/envelope.ts';
import type { CommandType, Refusal } from './machines/commands.ts';

export const ErrorCode = {
  // input and configuration
  InvalidId: 'invalid_id',
  InvalidOption: 'invalid_option',
  /** A command used wrongly (the CLI's usage mistakes). */
  Usage: 'usage',
  // codec
  DecodeFailed: 'decode_failed',
  UnknownEventType: 'unknown_event_type',
  UnsupportedEventVersion: 'unsupported_event_version',
  InvalidPayload: 'invalid_payload',
  PayloadTooLarge: 'payload_too_large',
  // storage
  SchemaTooNew: 'schema_too_new',
  MigrationFailed: 'migration_failed',
  // a server or worker that cannot be reached now (retrying later may work)
  Unavailable: 'unavailable',
  /** The server refused the operation to this user (nats.conf permissions). */
  PermissionDenied: 'permission_denied',
  /** What was asked for is not there (a stream, a file, projection tables). */
  NotFound: 'not_found',
  /** No answer within a deadline. */
  Timeout: 'timeout',
  // event log
  SequenceConflict: 'sequence_conflict',
  DuplicateEvent: 'duplicate_event',
  LogClosed: 'log_closed',
  // session machine and execution
  CommandRefused: 'command_refused',
  ClaimLost: 'claim_lost',
  Cancelled: 'cancelled',
  /** A turn ran past its deadline (`turnTimeoutMs`, `--turn-timeout`): it was stopped and settled failed. */
  TurnTimeout: 'turn_timeout',
  /** A model turn used all its model calls (`maxSteps`, `--max-steps`) while the model still called tools: it settled failed, never a silent success. */
  StepLimit: 'step_limit',
  /** A session or its tenant has spent its budget (tokens or cost): the turn stopped before its next model call and settled failed. */
  BudgetExceeded: 'budget_exceeded',
  /** A tool from an MCP server failed: its error result, a timeout, or a server that is down; the model sees it as the call's error. */
  ToolFailed: 'tool_failed',
  /** Not a failure: a runner's execution ends so that its turn waits (`ctx.waitFor`, `ctx.sleep`); the turn settles `waiting`. */
  Waiting: 'waiting',
  // input
  InputConflict: 'input_conflict',
  /** A fork into a session id that already has events (other than the same fork sent again). */
  SessionExists: 'session_exists',
  /** A fork at a sequence inside a turn: the message names the nearest settled sequences. */
  NotSettled: 'not_settled',
  /** A session or worker limit would be passed (pending inputs, pending bytes): the admission is refused. */
  LimitExceeded: 'limit_exceeded',
  InvariantViolation: 'invariant_violation',
  // projector
  InconsistentStream: 'inconsistent_stream',
  // a model server refused a request, or failed it after every retry
  ModelRequestFailed: 'model_request_failed',
  /** A failure sessiond did not expect (a bug, or something below it that broke). */
  Internal: 'internal',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * What kind of failure a code is, which decides what a caller does about it (and the CLI's exit
 * code): fix the input, retry later, ask for rights, look elsewhere, re-read and decide again,
 * accept the refusal, repair the data, or report a bug.
 */
export const ErrorKind = {
  InvalidInput: 'invalid_input',
  Unavailable: 'unavailable',
  Permission: 'permission',
  NotFound: 'not_found',
  Conflict: 'conflict',
  Refused: 'refused',
  CorruptData: 'corrupt_data',
  Timeout: 'timeout',
  Failure: 'failure',
} as const;
export type ErrorKind = (typeof ErrorKind)[keyof typeof ErrorKind];

const KIND: Record<ErrorCode, ErrorKind> = {
  invalid_id: 'invalid_input',
  invalid_option: 'invalid_input',
  usage: 'invalid_input',
  invalid_payload: 'invalid_input',
  payload_too_large: 'invalid_input',
  decode_failed: 'corrupt_data',
  unknown_event_type: 'corrupt_data',
  unsupported_event_version: 'corrupt_data',
  schema_too_new: 'corrupt_data',
  migration_failed: 'failure',
  inconsistent_stream: 'corrupt_data',
  invariant_violation: 'corrupt_data',
  unavailable: 'unavailable',
  log_closed: 'unavailable',
  permission_denied: 'permission',
  not_found: 'not_found',
  timeout: 'timeout',
  sequence_conflict: 'conflict',
  duplicate_event: 'conflict',
  input_conflict: 'conflict',
  session_exists: 'conflict',
  not_settled: 'refused',
  command_refused: 'refused',
  claim_lost: 'refused',
  cancelled: 'refused',
  turn_timeout: 'timeout',
  step_limit: 'failure',
  budget_exceeded: 'refused',
  tool_failed: 'failure',
  waiting: 'refused',
  limit_exceeded: 'refused',
  model_request_failed: 'failure',
  internal: 'failure',
};

/** The kind of a code. */
export function kindOf(code: ErrorCode): ErrorKind {
  return KIND[code];
}

export class SessiondError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;
  constructor(code: ErrorCode, message: string, options: { cause?: unknown; details?: Record<string, unknown> } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SessiondError';
    this.code = code;
    this.details = options.details ?? {};
  }

  /** What kind of failure this is (from its code). */
  get kind(): ErrorKind {
    return kindOf(this.code);
  }
}

type ErrorOptions = { cause?: unknown; details?: Record<string, unknown> };

/** A server or worker could not be reached (retry later). */
export class ConnectionError extends SessiondError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(ErrorCode.Unavailable, message, options);
    this.name = 'ConnectionError';
  }
}
/** The server refused the operation to this user. */
export class PermissionError extends SessiondError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(ErrorCode.PermissionDenied, message, options);
    this.name = 'PermissionError';
  }
}
/** What was asked for is not there. */
export class NotFoundError extends SessiondError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(ErrorCode.NotFound, message, options);
    this.name = 'NotFoundError';
  }
}
/** Bad input: an option, an id, a payload, a command line. */
export class InvalidInputError extends SessiondError {
  constructor(
    message: string,
    options: ErrorOptions & {
      code?: typeof ErrorCode.InvalidOption | typeof ErrorCode.InvalidId | typeof ErrorCode.Usage | typeof ErrorCode.InvalidPayload;
    } = {},
  ) {
    super(options.code ?? ErrorCode.InvalidOption, message, options);
    this.name = 'InvalidInputError';
  }
}
/** Stored or received data that is not what sessiond wrote (an undecodable frame, a broken stream). */
export class CorruptDataError extends SessiondError {
  constructor(message: string, options: ErrorOptions & { code?: ErrorCode } = {}) {
    super(options.code ?? ErrorCode.DecodeFailed, message, options);
    this.name = 'CorruptDataError';
  }
}
/** No answer within a deadline. */
export class TimeoutError extends SessiondError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(ErrorCode.Timeout, message, options);
    this.name = 'TimeoutError';
  }
}

// the event log

/** An append whose `expectedSeq` is stale: another writer appended first (the fencing token held). */
export class SequenceConflictError extends SessiondError {
  readonly sessionId: string;
  readonly expectedSeq: number;
  readonly actualSeq: number;
  constructor(sessionId: string, expectedSeq: number, actualSeq: number, cause?: unknown) {
    super(
      ErrorCode.SequenceConflict,
      `Session ${sessionId} is at sequence ${actualSeq}, not ${expectedSeq} as expected: another writer appended first. Reload the session and decide again.`,
      { cause, details: { sessionId, expectedSeq, actualSeq } },
    );
    this.name = 'SequenceConflictError';
    this.sessionId = sessionId;
    this.expectedSeq = expectedSeq;
    this.actualSeq = actualSeq;
  }
}

export function isSequenceConflict(err: unknown): err is SequenceConflictError {
  return err instanceof SequenceConflictError;
}

// session machine and execution

/** The session machine refused a command; `reason` is a stable `Refusal` string. */
export class CommandRefusedError extends SessiondError {
  readonly reason: Refusal;
  readonly command: CommandType;
  readonly sessionId: string;
  constructor(sessionId: string, command: CommandType, reason: Refusal, message: string) {
    super(ErrorCode.CommandRefused, `${command} refused for session ${sessionId} (${reason}): ${message}`, { details: { sessionId, command, reason } });
    this.name = 'CommandRefusedError';
    this.reason = reason;
    this.command = command;
    this.sessionId = sessionId;
  }
}

export function isRefusal(err: unknown, ...reasons: Refusal[]): err is CommandRefusedError {
  return err instanceof CommandRefusedError && (reasons.length === 0 || reasons.includes(err.reason));
}

/** The owner no longer holds its claim: the runner must stop. The message is the seed's defect text. */
export class ClaimLostError extends SessiondError {
  readonly executionId: string;
  constructor(executionId: string, cause?: unknown) {
    super(ErrorCode.ClaimLost, `Session execution claim lost: ${executionId}`, { cause, details: { executionId } });
    this.name = 'ClaimLostError';
    this.executionId = executionId;
  }
}

/** An execution was cancelled (a runner's `ctx.signal.reason` when a cancel aborts it). */
export class CancelledError extends SessiondError {
  constructor(executionId: string, reason?: string) {
    super(ErrorCode.Cancelled, `Execution ${executionId} was cancelled${reason ? `: ${reason}` : ''}`, { details: { executionId } });
    this.name = 'CancelledError';
  }
}

/**
 * What ends a runner's execution when its turn waits (`ctx.waitFor`, `ctx.sleep`): the runner lets
 * it through (its signal aborts with it too); the turn settles `waiting` and resumes, running the
 * runner again from the top, once what it waits for has come. Not a failure: never recorded.
 */
export class WaitingError extends SessiondError {
  constructor(
    readonly executionId: string,
    readonly waitingFor: string,
  ) {
    super(ErrorCode.Waiting, `Execution ${executionId} ends to wait for ${waitingFor}; the turn resumes when it comes`, {
      details: { executionId, waitingFor },
    });
    this.name = 'WaitingError';
  }
}

/** What aborts a runner whose turn ran past its deadline: the turn settles failed with it (`type: 'turn_timeout'`). */
export class TurnTimeoutError extends SessiondError {
  constructor(executionId: string, turnTimeoutMs: number) {
    super(
      ErrorCode.TurnTimeout,
      `Execution ${executionId} ran longer than the turn deadline of ${formatMs(turnTimeoutMs)} (turnTimeoutMs, --turn-timeout) and was stopped: raise the deadline, or make the turn do less (fewer steps, shorter tool calls)`,
      { details: { executionId, turnTimeoutMs } },
    );
    this.name = 'TurnTimeoutError';
  }
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/** What aborts a runner when its worker shuts down: the turn is handed back (settled `released`). */
export class ShutdownError extends SessiondError {
  constructor() {
    super(ErrorCode.Unavailable, 'the worker is shutting down');
    this.name = 'ShutdownError';
  }
}

/** Turns anything thrown into the recorded error shape; unclassified errors are `{ type: 'unknown' }`. */
export function recordedError(err: unknown, type = 'unknown'): RecordedError {
  if (err instanceof Error) return { type, message: err.message, name: err.name };
  return { type: 'unknown', message: String(err) };
}

// the model runner

/** A model turn that used all of its model calls while the model still asked for tools. */
export class StepLimitError extends SessiondError {
  constructor(maxSteps: number) {
    super(
      ErrorCode.StepLimit,
      `The turn stopped at its step limit: ${maxSteps} model call${maxSteps === 1 ? '' : 's'} (maxSteps, --max-steps), and the model was still calling tools. The last tool results are in the conversation: send another prompt to let it go on, or raise the limit.`,
      { details: { maxSteps } },
    );
    this.name = 'StepLimitError';
  }
}

/** A turn stopped before a model call because its session (or the session's tenant) has spent its budget. */
export class BudgetExceededError extends SessiondError {
  constructor(
    readonly sessionId: string,
    readonly budget: { scope: 'session' | 'tenant'; tenant?: string; kind: 'tokens' | 'cost'; limit: number; spent: number },
  ) {
    const { scope, tenant, kind, limit, spent } = budget;
    const amount = (n: number) => (kind === 'tokens' ? `${n} tokens` : `$${n}`);
    const flag = kind === 'tokens' ? '--tokens N' : '--cost USD';
    const whose =
      scope === 'session' ? `Session ${sessionId} has spent its budget` : `Tenant ${tenant} (the owner of session ${sessionId}) has spent its budget`;
    const how = scope === 'session' ? `sessiond budget ${sessionId} ${flag}` : `sessiond budget --tenant ${tenant} ${flag}`;
    const reset = scope === 'session' ? `sessiond budget ${sessionId} --reset` : `sessiond budget --tenant ${tenant} --reset`;
    super(
      ErrorCode.BudgetExceeded,
      `${whose}: ${amount(spent)} spent of a ${kind} budget of ${amount(limit)}, so the turn stopped before its next model call. Raise the budget (${how}) or reset the spend (${reset}), then prompt again.`,
      { details: { sessionId, ...budget } },
    );
    this.name = 'BudgetExceededError';
  }
}

/** How a failed model request is handled (src/runner/model/retry.ts classifies it): sent again, compacted, or failed. */
export type ModelFailure =
  | { kind: 'retry'; status: number | undefined; message: string; retryAfterMs: number | undefined }
  | { kind: 'overflow'; message: string }
  | { kind: 'fatal'; status: number | undefined; message: string };

/** A model request that failed for good (after retries, or not retryable). */
export class ModelRequestError extends SessiondError {
  constructor(
    readonly failure: ModelFailure,
    readonly attempts: number,
  ) {
    super(ErrorCode.ModelRequestFailed, `model request failed${attempts > 1 ? ` after ${attempts} attempts` : ''}: ${failure.message}`, {
      details: { kind: failure.kind, ...('status' in failure && failure.status !== undefined ? { status: failure.status } : {}) },
    });
    this.name = 'ModelRequestError';
  }
}

/** A call to an MCP server's tool that failed (an error result, a timeout, a server down): the model sees it as the call's error. */
export class McpToolError extends SessiondError {
  constructor(message: string) {
    super(ErrorCode.ToolFailed, message);
    this.name = 'McpToolError';
  }
}

/** A call the model runner cannot make (no such tool, input that fails the schema): the model gets it as the call's error result. */
export class ToolInputError extends SessiondError {
  constructor(message: string) {
    super(ErrorCode.InvalidPayload, message);
    this.name = 'ToolInputError';
  }
}

// export files

/** An export file damaged at byte `offset`, in frame `frame` (the header is frame 0): every event before it was read. */
export class CorruptExportError extends SessiondError {
  constructor(
    readonly file: string,
    readonly offset: number,
    readonly frame: number,
    why: string,
    cause?: unknown,
  ) {
    super(ErrorCode.DecodeFailed, `${file} is damaged at byte ${offset} (frame ${frame}): ${why}. The ${Math.max(0, frame - 1)} events before it were read.`, {
      cause,
      details: { file, offset, frame },
    });
    this.name = 'CorruptExportError';
  }
}

// the projector

/** `evt_1 (tool.failed, session ses_1, seq 7, position 12)`: how errors name an event. */
function describeEvent(event: Pick<SessionEvent, 'id' | 'type' | 'sessionId' | 'seq'> & { position?: number }): string {
  const position = event.position === undefined ? 'no position' : `position ${event.position}`;
  return `${String(event.id)} (${String(event.type)}, session ${String(event.sessionId)}, seq ${String(event.seq)}, ${position})`;
}

/**
 * A batch could not be applied because of one event; nothing of the batch was written. It names the
 * event, says the batch was rolled back, and keeps the rule's error as `cause` with the same code
 * (src/projector/errors.ts wraps what a rule threw in it).
 */
export class ProjectionError extends SessiondError {
  readonly eventId: string;
  readonly eventType: string;
  readonly sessionId: string;
  readonly seq: number;
  readonly position: number | undefined;
  constructor(projector: string, event: SessionEvent, cause: SessiondError, checkpoint: number) {
    const stream = cause.code === ErrorCode.InconsistentStream || cause.code === ErrorCode.InvariantViolation;
    super(
      cause.code,
      `${cause.message} [event ${describeEvent(event)}]. Projector "${projector}" rolled back the whole batch: nothing of it was applied and its checkpoint stays at ${checkpoint}.` +
        (stream
          ? " The projector never skips an event: inspect the session's events, fix the writer that produced this one (or repair the log), then apply again."
          : ''),
      {
        cause,
        details: {
          ...cause.details,
          projector,
          eventId: event.id,
          type: event.type,
          sessionId: event.sessionId,
          seq: event.seq,
          position: event.position,
          checkpoint,
        },
      },
    );
    this.name = 'ProjectionError';
    this.eventId = event.id;
    this.eventType = event.type;
    this.sessionId = event.sessionId;
    this.seq = event.seq;
    this.position = event.position;
  }
}

// the inspector

/** A request the inspector refuses: the HTTP status, and the stable code it answers with (`reason`). */
export class HttpError extends SessiondError {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(status === 404 ? ErrorCode.NotFound : status >= 500 ? ErrorCode.Internal : ErrorCode.InvalidOption, message, { details: { status, reason } });
    this.name = 'HttpError';
  }
}

// the CLI

/** A user's mistake on the command line: printed plainly, without a stack trace. */
export class UsageError extends InvalidInputError {
  constructor(message: string) {
    super(message, { code: ErrorCode.Usage });
    this.name = 'UsageError';
  }
}

/**
 * Whether `err` is an error with this code, also when another copy of sessiond made it (a runner
 * file that imports sessiond from elsewhere than the worker does): `instanceof` sees only one copy.
 */
export function hasErrorCode(err: unknown, code: ErrorCode): boolean {
  return err instanceof Error && (err as { code?: unknown }).code === code;
}

export function isSessiondError(err: unknown, code?: ErrorCode): err is SessiondError {
  return err instanceof SessiondError && (code === undefined || err.code === code);
}

/** The message of any thrown value, for logs and recorded errors. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Longest part of a value an error message or reply echoes back (a hostile value can be megabytes). */
export const MAX_ECHO_CHARS = 200;

/**
 * `text` cut to at most `max` characters, with `…(N bytes)` (its UTF-8 size) appended when cut, so
 * a message never carries a whole huge value. A cut never splits a surrogate pair.
 */
export function boundText(text: string, max = MAX_ECHO_CHARS): string {
  return text.length <= max ? text : `${cut(text, max)}…(${Buffer.byteLength(text)} bytes)`;
}

/** `text` on one line (a provider's message may run to many): each line break, with the white space around it, becomes one space. */
export function oneLine(text: string): string {
  return text.replace(/\s*[\r\n\u2028\u2029]+\s*/g, ' ').trim();
}

/** The first `max` characters of `text`, one fewer if the last would be half a surrogate pair. */
function cut(text: string, max: number): string {
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

/**
 * A value as an error message shows it: a string JSON-quoted and cut to `max` characters (then
 * `…(N bytes)`), anything else as JSON, cut likewise (`an object` when it cannot be written).
 */
export function echo(value: unknown, max = MAX_ECHO_CHARS): string {
  if (typeof value === 'string') {
    return value.length <= max ? JSON.stringify(value) : `${JSON.stringify(cut(value, max))}…(${Buffer.byteLength(value)} bytes)`;
  }
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol' || typeof value === 'bigint') return String(value);
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    text = undefined; // cyclic or too deep to write
  }
  if (text === undefined) return Array.isArray(value) ? 'an array' : 'an object';
  return boundText(text, max);
}
