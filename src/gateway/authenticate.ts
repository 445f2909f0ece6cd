/**
 * The grant of a presented token: a static one (tokens.ts, until its `expires`) or a signed one
 * (jwt.ts). Both are looked up every time, whatever the other said, and every failure is the same
 * undefined, so neither the answer nor its timing tells an unknown token from an expired or forged one.
 */
import type { JwtVerifier } from './jwt.ts';
import type { Grant, TokenTable } from './tokens.ts';

export async function grantOf(presented: string, from: { tokens?: TokenTable; jwt?: JwtVerifier; now: number }): Promise<Grant | undefined> {
  const fromTable = from.tokens?.find(presented);
  const fromJwt = from.jwt ? await from.jwt.verify(presented) : undefined;
  const grant = fromTable ?? fromJwt;
  if (grant?.expiresAt !== undefined && from.now >= grant.expiresAt) return undefined;
  return grant;
}
