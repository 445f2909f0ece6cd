import { NotFoundError } from '../errors.ts';

/** What `status`, `events`, `wake`, `cancel` and `dropPending` answer for a session that has no events. */
export function unknownSession(sessionId: string, verb: string): NotFoundError {
  return new NotFoundError(
    `Session ${sessionId} has no events, so there is nothing to ${verb}. Check the session id, or admit a prompt first (it creates the session).`,
    { details: { sessionId } },
  );
}
