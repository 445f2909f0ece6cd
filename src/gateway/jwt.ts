/**
 * Signed tokens: JWTs from an identity provider, verified with `jose` against its JWKS (a file, read
 * again when it changes, or an https URL, cached and refreshed by jose). RS256 and ES256 only (the
 * algorithms are pinned: `none` and HS* never verify); `exp` and `nbf` are enforced with a small
 * clock tolerance; issuer and audience when configured. The grant comes from the claims
 * (jwt-claims.ts). Every failure is the same `undefined`: the caller answers one 401 for all.
 */
import { readFileSync } from 'node:fs';
import { type JSONWebKeySet, type JWTVerifyGetKey, createLocalJWKSet, createRemoteJWKSet, jwtVerify } from 'jose';
import { type Clock, systemClock } from '../clock.ts';
import { ErrorCode, SessiondError, messageOf } from '../errors.ts';
import { DEFAULT_CLAIMS, type JwtClaimNames, grantOfClaims } from './jwt-claims.ts';
import type { Grant } from './tokens.ts';
import { watchFile, type WatchedFile } from './watched-file.ts';

export const JWT_ALGORITHMS = ['RS256', 'ES256'] as const;
export const DEFAULT_CLOCK_TOLERANCE_S = 30;

export interface JwtOptions {
  /** A JWKS file, or an https URL serving one. */
  jwks: string;
  /** The `iss` a token must carry. */
  issuer?: string;
  /** An `aud` a token must carry. */
  audience?: string;
  /** Seconds of clock skew allowed on `exp` and `nbf` (default 30). */
  clockToleranceS?: number;
  /** Which claims give the reach and scopes (default DEFAULT_CLAIMS). */
  claims?: Partial<JwtClaimNames>;
  /** Time for `exp` and `nbf` (the file is still polled on real timers). */
  clock?: Clock;
  /** How often a JWKS file is stat'ed besides watching (default 2 s). */
  pollMs?: number;
  /** Why a token that looked like a JWT was refused (for the operator's log; the caller only gets 401). */
  onRefused?: (why: string) => void;
  /** A changed JWKS file read (`keys`: how many), or refused (`error`: it keeps the keys it had). */
  onReload?: (outcome: { keys: number } | { error: string }) => void;
}

export interface JwtVerifier {
  /** Where the keys come from (for the startup line). */
  readonly from: string;
  /** The grant of a valid token; undefined for anything else, whatever the cause. */
  verify(token: string): Promise<Grant | undefined>;
  close(): void;
}

function invalid(source: string, why: string): SessiondError {
  return new SessiondError(
    ErrorCode.InvalidOption,
    `Invalid JWKS ${source}: ${why}. Give a JSON Web Key Set file ({"keys": [{"kty": "RSA", "n": "...", "e": "AQAB", "kid": "..."}]}) or an https URL serving one (the identity provider's jwks_uri).`,
    { details: { source } },
  );
}

/** The key set of a JWKS document; throws with what is wrong. */
export function parseJwks(text: string, source: string): { getKey: JWTVerifyGetKey; keys: number } {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw invalid(source, `it is not JSON (${messageOf(err)})`);
  }
  const keys = (doc as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0) throw invalid(source, 'it needs a non-empty "keys" list');
  const usable = keys.filter((k) => k && typeof k === 'object' && ((k as { kty?: unknown }).kty === 'RSA' || (k as { kty?: unknown }).kty === 'EC'));
  if (usable.length === 0) throw invalid(source, `no RSA or EC public key in it (only ${JWT_ALGORITHMS.join(' and ')} tokens are accepted)`);
  if (usable.some((k) => 'd' in (k as object))) throw invalid(source, 'it holds a private key ("d"): publish the public keys only');
  try {
    return { getKey: createLocalJWKSet(doc as JSONWebKeySet), keys: usable.length };
  } catch (err) {
    throw invalid(source, messageOf(err));
  }
}

/** A verifier for the options; throws (with what was wrong) for a JWKS that cannot be read or used. */
export function jwtVerifier(options: JwtOptions): JwtVerifier {
  const clock = options.clock ?? systemClock;
  const names = { ...DEFAULT_CLAIMS, ...options.claims };
  const tolerance = options.clockToleranceS ?? DEFAULT_CLOCK_TOLERANCE_S;
  if (!Number.isFinite(tolerance) || tolerance < 0 || tolerance > 600)
    throw new SessiondError(ErrorCode.InvalidOption, `Invalid JWT clock tolerance ${tolerance}: 0 to 600 seconds.`);
  let getKey: JWTVerifyGetKey;
  let watched: WatchedFile | undefined;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(options.jwks)) {
    let url: URL;
    try {
      url = new URL(options.jwks);
    } catch {
      throw invalid(options.jwks, 'it is not a URL');
    }
    if (url.protocol !== 'https:') throw invalid(options.jwks, 'a JWKS URL must be https (or give a file)');
    getKey = createRemoteJWKSet(url, { cacheMaxAge: 10 * 60_000, cooldownDuration: 30_000 });
  } else {
    const report = options.onReload ?? (() => {});
    watched = watchFile(
      options.jwks,
      (text) => {
        try {
          const read = parseJwks(text, options.jwks);
          getKey = read.getKey;
          report({ keys: read.keys });
        } catch (err) {
          report({ error: `${messageOf(err)} The gateway keeps the keys it had.` });
        }
      },
      { ...(options.pollMs === undefined ? {} : { pollMs: options.pollMs }), onError: (error) => report({ error }) },
    );
    try {
      let text: string;
      try {
        text = readFileSync(options.jwks, 'utf8');
      } catch (err) {
        throw invalid(options.jwks, `cannot read it (${messageOf(err)})`);
      }
      getKey = parseJwks(text, options.jwks).getKey;
    } catch (err) {
      watched.close();
      throw err;
    }
  }
  return {
    from: options.jwks,
    async verify(token) {
      try {
        const { payload } = await jwtVerify(token, (header, input) => getKey(header, input), {
          algorithms: [...JWT_ALGORITHMS],
          clockTolerance: tolerance,
          currentDate: new Date(clock.now()),
          requiredClaims: ['exp', 'sub'],
          ...(options.issuer === undefined ? {} : { issuer: options.issuer }),
          ...(options.audience === undefined ? {} : { audience: options.audience }),
        });
        const grant = grantOfClaims(payload as Record<string, unknown>, names);
        if (typeof grant === 'string') options.onRefused?.(grant);
        return typeof grant === 'string' ? undefined : grant;
      } catch (err) {
        // a token that is not a JWT at all (a static one, a typo) is not worth a line
        if (token.split('.').length === 3) options.onRefused?.(messageOf(err));
        return undefined;
      }
    },
    close: () => watched?.close(),
  };
}
