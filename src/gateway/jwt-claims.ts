/**
 * A verified JWT's claims as a grant (tokens.ts), checked as a token file entry is: `sub` is the
 * name (and the actor its decisions record), the session reach and scopes come from configured
 * claims. Pure: the signature and times are checked before (jwt.ts).
 */
import { isIdText } from '../ids.ts';
import { parseTagArgument } from '../events/tags.ts';
import { SCOPES, type Scope } from './scopes.ts';
import { TENANT, type Grant } from './tokens.ts';

/** The claims a grant is read from. */
export interface JwtClaimNames {
  /** An id prefix, or `*` (default `sessiond_sessions`). */
  sessions: string;
  /** Scopes, a space-separated string or a list (default `scope`); scopes sessiond does not know (`openid`) are ignored. */
  scope: string;
  /** The tenant, or `*` (default `sessiond_tenant`). */
  tenant: string;
  /** A `key=value` tag (default `sessiond_tag`). */
  tag: string;
}

export const DEFAULT_CLAIMS: JwtClaimNames = { sessions: 'sessiond_sessions', scope: 'scope', tenant: 'sessiond_tenant', tag: 'sessiond_tag' };

/** The grant of a verified token's claims, or why there is none (never shown to the caller: it gets 401). */
export function grantOfClaims(claims: Record<string, unknown>, names: JwtClaimNames): Grant | string {
  const sub = claims.sub;
  if (typeof sub !== 'string' || sub.length === 0 || sub.length > 200 || /[\u0000-\u001f\u007f]/.test(sub)) return 'no usable sub claim';
  const raw = claims[names.scope];
  const list = typeof raw === 'string' ? raw.split(/\s+/) : Array.isArray(raw) ? raw : [];
  const scopes = new Set(list.filter((s): s is Scope => (SCOPES as readonly unknown[]).includes(s)));
  if (scopes.size === 0) return `no sessiond scope in claim ${names.scope}`;
  const sessions = claims[names.sessions];
  const tenant = claims[names.tenant];
  const tag = claims[names.tag];
  if (sessions === undefined && tenant === undefined && tag === undefined)
    return `none of the claims ${names.sessions}, ${names.tenant}, ${names.tag} says what it reaches`;
  if (sessions !== undefined && sessions !== '*' && !isIdText(sessions)) return `claim ${names.sessions} is not "*" or an id prefix`;
  const grant: Grant = { name: sub, prefix: sessions === undefined || sessions === '*' ? '' : (sessions as string), scopes };
  if (tenant !== undefined) {
    if (typeof tenant !== 'string' || !(tenant === '*' || TENANT.test(tenant))) return `claim ${names.tenant} is not "*" or a tenant name`;
    grant.tenant = tenant;
  }
  if (tag !== undefined) {
    if (typeof tag !== 'string') return `claim ${names.tag} is not key=value`;
    try {
      const [key, value] = parseTagArgument(tag, false);
      grant.tag = { key, value: value! };
    } catch {
      return `claim ${names.tag} is not key=value`;
    }
  }
  return grant;
}
