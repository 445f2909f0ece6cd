/**
 * The gateway's bearer tokens: a JSON document (`--tokens FILE` or `SESSIOND_GATEWAY_TOKENS`) naming
 * each token (the secret or its SHA-256) and what it reaches (`sessions` prefix, `tag`, `tenant`,
 * `scopes`, `expires`). Compared by hash in constant time. Format: docs/gateway.md#tokens.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { ErrorCode, SessiondError } from '../errors.ts';
import { parseTagArgument } from '../events/tags.ts';
import { isIdText } from '../ids.ts';
import { DEFAULT_SCOPES, parseScopes, type Scope } from './scopes.ts';
import { parseQuotas, type Quotas } from './quotas.ts';

/** What a token may reach. */
export interface Grant {
  /** The token's name (in the gateway's log lines; never the token). */
  name: string;
  /** Session ids starting with this ('' = every session). */
  prefix: string;
  /** Only sessions carrying this tag (new sessions get it). */
  tag?: { key: string; value: string };
  /** What the token may do (scopes.ts). */
  scopes: ReadonlySet<Scope>;
  /** The tenant whose sessions it reaches and creates; `*` reaches every tenant's. Absent: the token's own sessions (its name is the owner). */
  tenant?: string;
  /** When the token stops working (ms since the epoch). */
  expiresAt?: number;
  /** Its own quotas (quotas.ts), over the gateway's defaults. */
  limits?: Partial<Quotas>;
}

/** The owner a grant gives the sessions it creates, and must match on the sessions it reaches: its tenant, else its name. */
export const ownerOf = (grant: Grant): string => grant.tenant ?? `token:${grant.name}`;

export interface TokenTable {
  readonly size: number;
  /** The grant of a presented token, or undefined. */
  find(presented: string): Grant | undefined;
  /** Stops following the file it came from (token-file.ts). */
  close?(): void;
}

const MIN_TOKEN_CHARS = 16;
/** A tenant's name: also a NATS subject token and a user name, so letters, digits, _ and - only. */
export const TENANT = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_TOKENS = 10_000;

function invalid(source: string, why: string): SessiondError {
  return new SessiondError(
    ErrorCode.InvalidOption,
    `Invalid gateway tokens in ${source}: ${why}. Expected {"tokens": [{"name": "web-app", "token": "<16+ characters>", "sessions": "ses_web_"}, {"name": "acme", "sha256": "<hex>", "tenant": "acme", "scopes": ["read", "prompt"], "expires": "2027-01-01T00:00:00Z"}]}.`,
    { details: { source } },
  );
}

const sha256 = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/** Parses the tokens document (`source` names where it came from, for the messages). */
export function parseTokens(text: string, source: string): TokenTable {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw invalid(source, `it is not JSON (${(err as Error).message})`);
  }
  const list = (doc as { tokens?: unknown } | null)?.tokens;
  if (!Array.isArray(list) || list.length === 0) throw invalid(source, 'it needs a non-empty "tokens" list');
  if (list.length > MAX_TOKENS) throw invalid(source, `at most ${MAX_TOKENS} tokens`);
  const entries: { hash: Buffer; grant: Grant }[] = [];
  const names = new Set<string>();
  list.forEach((raw, i) => {
    const at = `tokens[${i}]`;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw invalid(source, `${at} is not an object`);
    const t = raw as Record<string, unknown>;
    const unknown = Object.keys(t).filter((k) => !['name', 'token', 'sha256', 'sessions', 'tag', 'scopes', 'tenant', 'expires', 'limits'].includes(k));
    if (unknown.length > 0) throw invalid(source, `${at} has unknown field ${unknown[0]}`);
    if (typeof t.name !== 'string' || !/^[\w.@-]{1,64}$/.test(t.name)) throw invalid(source, `${at}.name must be 1-64 letters, digits or ._@-`);
    if (names.has(t.name)) throw invalid(source, `${at}.name ${t.name} is used twice`);
    names.add(t.name);
    let hash: Buffer;
    if (typeof t.token === 'string' && t.sha256 === undefined) {
      if (t.token.length < MIN_TOKEN_CHARS)
        throw invalid(source, `${at}.token is shorter than ${MIN_TOKEN_CHARS} characters (use a long random one: openssl rand -hex 24)`);
      hash = sha256(t.token);
    } else if (typeof t.sha256 === 'string' && t.token === undefined) {
      if (!/^[0-9a-fA-F]{64}$/.test(t.sha256)) throw invalid(source, `${at}.sha256 must be 64 hex digits (printf %s TOKEN | sha256sum)`);
      hash = Buffer.from(t.sha256, 'hex');
    } else throw invalid(source, `${at} needs exactly one of "token" or "sha256"`);
    if (entries.some((e) => e.hash.equals(hash))) throw invalid(source, `${at} repeats the token of another entry`);
    if (t.sessions === undefined && t.tag === undefined && t.tenant === undefined)
      throw invalid(source, `${at} needs "sessions" (an id prefix, or "*"), "tag" (key=value) or "tenant", or more than one`);
    if (t.sessions !== undefined && t.sessions !== '*' && !isIdText(t.sessions))
      throw invalid(source, `${at}.sessions must be "*" or the start of a session id (1-128 characters from A-Z a-z 0-9 _ - : + = @)`);
    let scopes: ReadonlySet<Scope>;
    try {
      scopes = t.scopes === undefined ? new Set(DEFAULT_SCOPES) : parseScopes(t.scopes);
    } catch (err) {
      throw invalid(source, `${at}.scopes: ${(err as Error).message}`);
    }
    const grant: Grant = { name: t.name, prefix: t.sessions === undefined || t.sessions === '*' ? '' : (t.sessions as string), scopes };
    if (t.tenant !== undefined) {
      if (typeof t.tenant !== 'string' || !(t.tenant === '*' || TENANT.test(t.tenant)))
        throw invalid(source, `${at}.tenant must be "*" (every tenant) or 1-64 letters, digits or _-`);
      grant.tenant = t.tenant;
    }
    if (t.expires !== undefined) {
      const at_ = typeof t.expires === 'string' && /^\d{4}-\d\d-\d\dT/.test(t.expires) ? Date.parse(t.expires) : Number.NaN;
      if (!Number.isFinite(at_)) throw invalid(source, `${at}.expires must be an ISO time like "2027-01-01T00:00:00Z"`);
      grant.expiresAt = at_;
    }
    if (t.tag !== undefined) {
      if (typeof t.tag !== 'string') throw invalid(source, `${at}.tag must be a string key=value`);
      try {
        const [key, value] = parseTagArgument(t.tag, false);
        grant.tag = { key, value: value! };
      } catch (err) {
        throw invalid(source, `${at}.tag: ${(err as Error).message}`);
      }
    }
    if (t.limits !== undefined) {
      try {
        grant.limits = parseQuotas(t.limits, `${at}.limits`);
      } catch (err) {
        throw invalid(source, (err as Error).message);
      }
    }
    entries.push({ hash, grant });
  });
  return {
    size: entries.length,
    find(presented) {
      const hash = sha256(presented);
      let found: Grant | undefined;
      // every entry compared, in constant time each: no early exit tells how far a guess got
      for (const e of entries) if (timingSafeEqual(e.hash, hash)) found = e.grant;
      return found;
    },
  };
}

/** The token presented by a request: `Authorization: Bearer T`, or `access_token=T` in the query (for EventSource, which cannot set headers). */
export function presentedToken(authorization: string | undefined, query: URLSearchParams): string | undefined {
  if (authorization !== undefined) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    return m ? m[1] : undefined;
  }
  return query.get('access_token') ?? undefined;
}
