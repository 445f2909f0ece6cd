/**
 * `Sessions.events`: a session's committed events after a seq, read from its log, and `not_found`
 * for a session with no events (as `status` answers), checked only when the page is empty.
 */
import { InvalidInputError } from '../errors.ts';
import type { SessionEvent } from '../events/envelope.ts';
import type { EventLog } from '../events/event-log.ts';
import { validateId } from '../ids.ts';
import type { EventsOptions } from './sessions.ts';
import { unknownSession } from './unknown-session.ts';

/** The options checked: `afterSeq` a whole number >= 0 (default 0), `limit` one >= 1 when given. */
export function checkEventsOptions(options: EventsOptions = {}): { afterSeq: number; limit?: number } {
  const { afterSeq = 0, limit } = options;
  if (!Number.isSafeInteger(afterSeq) || afterSeq < 0)
    throw new InvalidInputError(`Invalid afterSeq ${JSON.stringify(afterSeq)}: give a whole number >= 0 (the seq of the last event already read).`);
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 1))
    throw new InvalidInputError(`Invalid limit ${JSON.stringify(limit)}: give a whole number >= 1, or leave it out for every event.`);
  return limit === undefined ? { afterSeq } : { afterSeq, limit };
}

/** The events of `sessionId` after `options.afterSeq`, in order; `hasEvents` says whether the session exists (asked only for an empty page). */
export async function readEvents(
  log: Pick<EventLog, 'readSession'>,
  sessionId: string,
  options: EventsOptions | undefined,
  hasEvents: (sessionId: string) => Promise<boolean>,
): Promise<SessionEvent[]> {
  validateId(sessionId, 'session id');
  const events = await log.readSession(sessionId, checkEventsOptions(options));
  if (events.length === 0 && !(await hasEvents(sessionId))) throw unknownSession(sessionId, 'read');
  return events;
}
