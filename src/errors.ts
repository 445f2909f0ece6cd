/**
 * One error class for everything sessiond raises on purpose. Each carries a stable `code` from
 * `ErrorCode` (match on it, never on the message), an optional `cause`, and a message that says
 * what was wrong and what to do next.
 */
export const ErrorCode = {
  // input and configuration
  InvalidId: 'invalid_id',
  InvalidOption: 'invalid_option',
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
  // event log
  SequenceConflict: 'sequence_conflict',
  DuplicateEvent: 'duplicate_event',
  LogClosed: 'log_closed',
  // session machine and execution
  CommandRefused: 'command_refused',
  ClaimLost: 'claim_lost',
  // input
  InputConflict: 'input_conflict',
  InvariantViolation: 'invariant_violation',
  // projector
  InconsistentStream: 'inconsistent_stream',
  // a model server refused a request, or failed it after every retry
  ModelRequestFailed: 'model_request_failed',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export class SessiondError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;
  constructor(code: ErrorCode, message: string, options: { cause?: unknown; details?: Record<string, unknown> } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SessiondError';
    this.code = code;
    this.details = options.details ?? {};
  }
}

export function isSessiondError(err: unknown, code?: ErrorCode): err is SessiondError {
  return err instanceof SessiondError && (code === undefined || err.code === code);
}

/** The message of any thrown value, for logs and recorded errors. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
