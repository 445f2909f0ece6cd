/**
 * One error class for everything sessiond raises on purpose. Each carries a stable `code` from
 * `ErrorCode` (match on it, never on the message), an optional `cause`, and a message that says
 * what was wrong and what to do next.
 */
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
  // input
  InputConflict: 'input_conflict',
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
  invalid_id: 'invalid_input', invalid_option: 'invalid_input', usage: 'invalid_input',
  invalid_payload: 'invalid_input', payload_too_large: 'invalid_input',
  decode_failed: 'corrupt_data', unknown_event_type: 'corrupt_data', unsupported_event_version: 'corrupt_data',
  schema_too_new: 'corrupt_data', migration_failed: 'failure', inconsistent_stream: 'corrupt_data', invariant_violation: 'corrupt_data',
  unavailable: 'unavailable', log_closed: 'unavailable',
  permission_denied: 'permission', not_found: 'not_found', timeout: 'timeout',
  sequence_conflict: 'conflict', duplicate_event: 'conflict', input_conflict: 'conflict',
  command_refused: 'refused', claim_lost: 'refused', cancelled: 'refused', limit_exceeded: 'refused',
  model_request_failed: 'failure', internal: 'failure',
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
  constructor(message: string, options: ErrorOptions = {}) { super(ErrorCode.Unavailable, message, options); this.name = 'ConnectionError'; }
}
/** The server refused the operation to this user. */
export class PermissionError extends SessiondError {
  constructor(message: string, options: ErrorOptions = {}) { super(ErrorCode.PermissionDenied, message, options); this.name = 'PermissionError'; }
}
/** What was asked for is not there. */
export class NotFoundError extends SessiondError {
  constructor(message: string, options: ErrorOptions = {}) { super(ErrorCode.NotFound, message, options); this.name = 'NotFoundError'; }
}
/** Bad input: an option, an id, a payload, a command line. */
export class InvalidInputError extends SessiondError {
  constructor(message: string, options: ErrorOptions & { code?: typeof ErrorCode.InvalidOption | typeof ErrorCode.InvalidId | typeof ErrorCode.Usage | typeof ErrorCode.InvalidPayload } = {}) {
    super(options.code ?? ErrorCode.InvalidOption, message, options); this.name = 'InvalidInputError';
  }
}
/** Stored or received data that is not what sessiond wrote (an undecodable frame, a broken stream). */
export class CorruptDataError extends SessiondError {
  constructor(message: string, options: ErrorOptions & { code?: ErrorCode } = {}) { super(options.code ?? ErrorCode.DecodeFailed, message, options); this.name = 'CorruptDataError'; }
}
/** No answer within a deadline. */
export class TimeoutError extends SessiondError {
  constructor(message: string, options: ErrorOptions = {}) { super(ErrorCode.Timeout, message, options); this.name = 'TimeoutError'; }
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
