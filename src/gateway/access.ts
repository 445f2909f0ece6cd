/**
 * What a grant (tokens.ts) lets a request touch: a session with the grant's prefix and tag whose owner
 * is the grant's (`ownerOf`) or none, any for tenant `*`. Any other answers 404 as a missing session,
 * on every route; a new session gets the grant's tag and owner, fixed inside the append
 * (docs/gateway.md#tenants-and-owners).
 */
import { HttpError, isSessiondError, ErrorCode } from '../errors.ts';
import type { SessionStatus, Sessions } from '../sessions/sessions.ts';
import type { ListFilter, SessionPage } from '../sessions/list.ts';
import type { Tags } from '../events/tags.ts';
import { ownerReaches } from '../sessions/owner.ts';
import { ownerOf, type Grant } from './tokens.ts';
import { SCOPES } from './scopes.ts';

/** Every session, no tag: what a gateway without tokens (loopback only) grants. */
export const OPEN_GRANT: Grant = { name: 'open', prefix: '', scopes: new Set(SCOPES), tenant: '*' };

const hasTag = (grant: Grant, tags: Tags | undefined): boolean => !grant.tag || tags?.[grant.tag.key] === grant.tag.value;

/** The owner a grant acts as: undefined for tenant `*` (it reaches every session, and what it creates has no owner, as a trusted process's). */
export const actingOwner = (grant: Grant): string | undefined => (grant.tenant === '*' ? undefined : ownerOf(grant));

/** Whether the grant reaches a session with these tags and owner (its prefix checked apart). */
const reaches = (grant: Grant, s: { tags?: Tags; ownedBy?: string | null }): boolean => hasTag(grant, s.tags) && ownerReaches(s.ownedBy, actingOwner(grant));

/** The one answer for a session outside a grant's reach, or with no events. */
export function notFound(sessionId: string): HttpError {
  return new HttpError(404, ErrorCode.NotFound, `Session ${sessionId} has no events, or this token may not reach it.`);
}

/** The session's status, when it exists and the grant reaches it; else 404. */
export async function reachable(sessions: Omit<Sessions, 'close'>, grant: Grant, sessionId: string): Promise<SessionStatus> {
  if (!sessionId.startsWith(grant.prefix)) throw notFound(sessionId);
  let status: SessionStatus;
  try {
    status = await sessions.status(sessionId);
  } catch (err) {
    if (isSessiondError(err, ErrorCode.NotFound)) throw notFound(sessionId);
    throw err;
  }
  if (!reaches(grant, status)) throw notFound(sessionId);
  return status;
}

/**
 * Checks a request that may start the session (admit, fork into it): inside the prefix and, when it
 * exists, reachable (else 404, the same either way). Returns what to start it with: the tags (the
 * grant's added; a request naming another value for that key is refused, 403) and the owner, which
 * the machine checks again inside the append (this read is not the guard against a racing creator).
 */
export async function mayStart(
  sessions: Omit<Sessions, 'close'>,
  grant: Grant,
  sessionId: string,
  tags: Tags | undefined,
): Promise<{ tags?: Tags; owner?: string }> {
  if (!sessionId.startsWith(grant.prefix)) throw notFound(sessionId);
  let startTags = tags;
  if (grant.tag) {
    const { key, value } = grant.tag;
    if (tags?.[key] !== undefined && tags[key] !== value)
      throw new HttpError(
        403,
        ErrorCode.PermissionDenied,
        `Token ${grant.name} reaches sessions tagged ${key}=${value} only: leave out tag ${key}, or give it that value.`,
      );
    startTags = { ...tags, [key]: value };
  }
  try {
    const status = await sessions.status(sessionId);
    if (!reaches(grant, status)) throw notFound(sessionId);
  } catch (err) {
    if (!isSessiondError(err, ErrorCode.NotFound) || err instanceof HttpError) throw err;
  }
  const owner = actingOwner(grant);
  return { ...(startTags ? { tags: startTags } : {}), ...(owner === undefined ? {} : { owner }) };
}

/** `answer` (an admission or a fork), with a `not_found` (another owner won the id meanwhile) answered as every session out of reach is. */
export async function asReached<T>(sessionId: string, answer: Promise<T>): Promise<T> {
  try {
    return await answer;
  } catch (err) {
    if (isSessiondError(err, ErrorCode.NotFound) && !(err instanceof HttpError)) throw notFound(sessionId);
    throw err;
  }
}

/** Tag changes a grant may make: never the key its reach depends on. */
export function checkTagChanges(grant: Grant, changes: Record<string, string | null>): void {
  if (grant.tag && Object.hasOwn(changes, grant.tag.key))
    throw new HttpError(403, ErrorCode.PermissionDenied, `Token ${grant.name} may not change tag ${grant.tag.key}: its reach depends on it.`);
}

/**
 * A page of the sessions the grant reaches: the grant's tag and prefix become the filter's, so pages
 * are as full as the limit says. A filter reaching outside the grant gets an empty page.
 */
export async function listFor(sessions: Omit<Sessions, 'close'>, grant: Grant, filter: ListFilter): Promise<SessionPage> {
  let f = filter;
  if (grant.tag) {
    const { key, value } = grant.tag;
    if (filter.tags?.[key] !== undefined && filter.tags[key] !== value) return { sessions: [], next: null };
    f = { ...f, tags: { ...filter.tags, [key]: value } };
  }
  const owner = actingOwner(grant);
  if (owner !== undefined) f = { ...f, reachableBy: owner };
  if (grant.prefix !== '') {
    const asked = filter.idPrefix ?? '';
    // the narrower of the two prefixes, when one holds the other; else nothing the grant reaches matches
    if (asked.startsWith(grant.prefix)) f = { ...f, idPrefix: asked };
    else if (grant.prefix.startsWith(asked)) f = { ...f, idPrefix: grant.prefix };
    else return { sessions: [], next: null };
  }
  return sessions.list(f);
}
