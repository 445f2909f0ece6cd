/**
 * Errors the projector raises. Rule modules throw a plain `SessiondError` whose message states the
 * rule that was broken (e.g. exactly `Tool error name changed for call_1: TypeError -> RangeError`);
 * the projector wraps it in a `ProjectionError` (src/errors.ts) that names the event (id, type,
 * session, seq, position), says the batch was rolled back, and keeps the rule's error as `cause`
 * with the same code.
 */
import { ErrorCode, ProjectionError, SessiondError, messageOf } from '../errors.ts';
import type { SessionEvent } from '../events/envelope.ts';

/** The stream contradicts what the projection already holds (a fail-fast rule of the projector). */
export function inconsistent(message: string, details: Record<string, unknown> = {}): SessiondError {
  return new SessiondError(ErrorCode.InconsistentStream, message, { details });
}

/** An engine invariant is broken in the log (e.g. an input promoted twice). */
export function invariant(message: string, details: Record<string, unknown> = {}): SessiondError {
  return new SessiondError(ErrorCode.InvariantViolation, message, { details });
}

/**
 * Turns what a rule threw into the error `apply` raises. Our own errors and SQLite constraint
 * failures are about the event and get wrapped; anything else (I/O, a closed database) is not about
 * the event and is rethrown as it is.
 */
export function wrapEventError(projector: string, event: SessionEvent, err: unknown, checkpoint: number): unknown {
  if (err instanceof ProjectionError) return err;
  if (err instanceof SessiondError) return new ProjectionError(projector, event, err, checkpoint);
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && code.startsWith('SQLITE_CONSTRAINT')) {
    const cause = new SessiondError(ErrorCode.InconsistentStream, `The event breaks a constraint of the projection tables (${messageOf(err)})`, { cause: err });
    return new ProjectionError(projector, event, cause, checkpoint);
  }
  return err;
}
