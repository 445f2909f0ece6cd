/**
 * What a grant (tokens.ts) lets a request touch. A session outside the grant answers exactly as a
 * session that does not exist (404), so a token cannot learn which ids others use; a new session
 * may be started only inside the grant's prefix (else 403), and gets the grant's tag.
 */
import { HttpError, isSessiondError, ErrorCode } from '../errors.ts';
import type { SessionStatus, Sessions } from '../sessions/sessions.ts';
import type { ListFilter, SessionPage } from '../sessions/list.ts';
import type { Tags } from '../sessions/tags.ts';
import type { Grant } from './tokens.ts';
import { SCOPES } from './scopes.ts';

/** Every session, no tag: what a gateway without tokens (loopback only) grants. */
export const OPEN_GRANT: Grant = { name: 'open', prefix: '', scopes: new Set(SCOPES), tenant: '*' };

const hasTag = (grant: Grant, tags: Tags | undefined): boolean => !grant.tag || tags?.[grant.tag.key] === grant.tag.value;

function notFound(sessionId: string): HttpError {
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
  if (!hasTag(grant, status.tags)) throw notFound(sessionId);
  return status;
}

/**
 * Checks a request that may start the session (admit, fork into it): inside the prefix (403), and,
 * when it exists, reachable (404). Returns the tags to start it with (the grant's tag added; a
 * request naming another value for that key is refused).
 */
export async function mayStart(sessions: Omit<Sessions, 'close'>, grant: Grant, sessionId: string, tags: Tags | undefined): Promise<Tags | undefined> {
  if (!sessionId.startsWith(grant.prefix))
    throw new HttpError(
      403,
      ErrorCode.PermissionDenied,
      `Token ${grant.name} may only reach sessions whose id starts with ${grant.prefix}; ${sessionId} does not.`,
    );
  if (!grant.tag) return tags;
  const { key, value } = grant.tag;
  if (tags?.[key] !== undefined && tags[key] !== value)
    throw new HttpError(
      403,
      ErrorCode.PermissionDenied,
      `Token ${grant.name} reaches sessions tagged ${key}=${value} only: leave out tag ${key}, or give it that value.`,
    );
  try {
    const status = await sessions.status(sessionId);
    if (!hasTag(grant, status.tags)) throw notFound(sessionId);
  } catch (err) {
    if (!isSessiondError(err, ErrorCode.NotFound) || err instanceof HttpError) throw err;
  }
  return { ...tags, [key]: value };
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
  if (grant.prefix !== '') {
    const asked = filter.idPrefix ?? '';
    // the narrower of the two prefixes, when one holds the other; else nothing the grant reaches matches
    if (asked.startsWith(grant.prefix)) f = { ...f, idPrefix: asked };
    else if (grant.prefix.startsWith(asked)) f = { ...f, idPrefix: grant.prefix };
    else return { sessions: [], next: null };
  }
  return sessions.list(f);
}
