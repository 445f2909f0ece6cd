/**
 * A session's status from its snapshot: the one function every `Sessions` implementation and the
 * NATS status reply use, so they answer with the same shape and the same rules (session-view.ts).
 */
import { InvalidInputError } from '../errors.ts';
import { validateId } from '../ids.ts';
import { pendingPage, sessionView } from '../machines/session-view.ts';
import type { SessionSnapshot } from '../machines/decider.ts';
import type { CommandHandler } from '../execution/command-handler.ts';
import { EXECUTION_INPUTS_SHOWN, type SessionStatus, type StatusOptions } from './sessions.ts';

/** The status of a snapshot at `now`: prompts stay out, and long lists are paged or cut, so it stays small however many inputs wait. */
export function statusOf(snapshot: SessionSnapshot, now: number, options: StatusOptions = {}): SessionStatus {
  // the turn an execution runs is the engine's key for session calls, not part of the status
  const { turnId: _turn, ...exec } = snapshot.context.execution ?? { turnId: undefined };
  return {
    ...sessionView(snapshot, now),
    ...(options.pendingFrom ? pendingPage(snapshot.context, options.pendingFrom) : {}),
    execution: 'id' in exec ? { ...exec, inputIds: exec.inputIds.slice(0, EXECUTION_INPUTS_SHOWN), inputCount: exec.inputIds.length } : null,
  };
}

export { unknownSession } from './unknown-session.ts';
import { unknownSession } from './unknown-session.ts';

/** A loader of snapshots that refuses a session with no events (`not_found`, naming what was asked). */
export function knownSessions(load: (sessionId: string) => Promise<SessionSnapshot>): (sessionId: string, verb: string) => Promise<SessionSnapshot> {
  return async (sessionId, verb) => {
    const snapshot = await load(validateId(sessionId, 'session id'));
    if (snapshot.context.seq === 0) throw unknownSession(sessionId, verb);
    return snapshot;
  };
}

/**
 * `answer` (a wake, cancel or drop, which loads the session to decide and writes nothing for one
 * with no events), or `not_found` when the session it loaded has no events: one load, not a check
 * before the decision's own.
 */
export async function unlessUnknown<T>(handler: Pick<CommandHandler, 'cached' | 'load'>, sessionId: string, verb: string, answer: Promise<T>): Promise<T> {
  // a refusal of a session with no events (nothing to resolve there) is that it does not exist
  const settled = await answer.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  const snapshot = handler.cached(sessionId) ?? (await handler.load(sessionId));
  if (snapshot.context.seq === 0) throw unknownSession(sessionId, verb);
  if (!settled.ok) throw settled.error;
  return settled.value;
}

/** `status`'s options checked: `pendingFrom` a whole number >= 0. */
export function checkStatusOptions(options: StatusOptions | undefined): StatusOptions {
  const from = options?.pendingFrom;
  if (from !== undefined && (typeof from !== 'number' || !Number.isInteger(from) || from < 0)) {
    throw new InvalidInputError(
      `Invalid status request: pendingFrom must be a whole number >= 0 (the index of the first pending input to list), got ${JSON.stringify(from)}.`,
    );
  }
  return options ?? {};
}
