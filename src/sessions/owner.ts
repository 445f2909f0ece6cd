/**
 * Session owners: fixed by a session's first event inside the log's own append (the machine refuses
 * another owner's admission, `not_owner`), never claimed later by an ownerless session; another
 * owner's session answers `not_found` (why: docs/gateway.md#tenants-and-owners).
 */
import { InvalidInputError, NotFoundError } from '../errors.ts';

const OWNER = /^[A-Za-z0-9_.:@+=-]{1,128}$/;

/** An owner as a request names it: 1-128 letters, digits or `_.:@+=-`. */
export function checkOwner(owner: unknown): string {
  if (typeof owner !== 'string' || !OWNER.test(owner))
    throw new InvalidInputError(`Invalid owner ${JSON.stringify(owner)}: 1-128 letters, digits or _.:@+=- (a tenant's name, or token:<name>).`);
  return owner;
}

/** Whether `owner` (undefined: a trusted caller) reaches a session owned by `ownedBy` (null: no one). */
export const ownerReaches = (ownedBy: string | null | undefined, owner: string | undefined): boolean =>
  owner === undefined || ownedBy === null || ownedBy === undefined || ownedBy === owner;

/** What a session outside the caller's reach answers: the words of a session that does not exist. */
export function unreachable(sessionId: string): NotFoundError {
  return new NotFoundError(`Session ${sessionId} has no events, or the caller may not reach it.`, { details: { sessionId } });
}
