/**
 * Errors the projector raises. Rule modules throw a plain `SessiondError` whose message states the
 * rule that was broken (e.g. exactly `Tool error name changed for call_1: TypeError -> RangeError`);
 * the projector wraps it in a `ProjectionError` that names the event (id, type, session, seq,
 * position), says the batch was rolled back, and keeps the rule's error as `cause` with the same code.
 */
import { ErrorCode, SessiondError, messageOf } from '../errors.ts';
import type { SessionEvent } from '../events/envelope.ts';

/** The stream contradicts what the projection already holds (a fail-fast rule of the projector). */
export function inconsistent(message: string, details: Record<string, unknown> = {}): SessiondError {
  return new SessiondError(ErrorCode.InconsistentStream, message, { details });
}

/** An engine invariant is broken in the log (e.g. an input promoted twice). */
export function invariant(message: string, details: Record<string, unknown> = {}): SessiondError {
  return new SessiondError(ErrorCode.InvariantViolation, message, { details });
}

/** `evt_1 (tool.failed, session ses_1, seq 7, position 12)`: how errors name an event. */
export function describeEvent(event: Pick<SessionEvent, 'id' | 'type' | 'sessionId' | 'seq'> & { position?: number }): string {
  const position = event.position === undefined ? 'no position' : `position ${event.position}`;
  return `${String(event.id)} (${String(event.type)}, session ${String(event.sessionId)}, seq ${String(event.seq)}, ${position})`;
}

/** A batch could not be applied because of one event; nothing of the batch was written. */
export class ProjectionError extends SessiondError {
  readonly eventId: string;
  readonly eventType: string;
  readonly sessionId: string;
  readonly seq: number;
  readonly position: number | undefined;
  constructor(projector: string, event: SessionEvent, cause: SessiondError, checkpoint: number) {
    const stream = cause.code === ErrorCode.InconsistentStream || cause.code === ErrorCode.InvariantViolation;
    super(cause.code,
      `${cause.message} [event ${describeEvent(event)}]. Projector "${projector}" rolled back the whole batch: nothing of it was applied and its checkpoint stays at ${checkpoint}.` +
      (stream ? ' The projector never skips an event: inspect the session\'s events, fix the writer that produced this one (or repair the log), then apply again.' : ''),
      { cause, details: { ...cause.details, projector, eventId: event.id, type: event.type, sessionId: event.sessionId, seq: event.seq, position: event.position, checkpoint } });
    this.name = 'ProjectionError';
    this.eventId = event.id;
    this.eventType = event.type;
    this.sessionId = event.sessionId;
    this.seq = event.seq;
    this.position = event.position;
  }
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
