/**
 * Who may use the inspector: the gateway's tokens and signed tokens (src/gateway/authenticate.ts).
 * Required whenever it is bound beyond loopback. A grant must reach every session (sessions "*",
 * no tag, tenant "*": the inspector shows them all); reading needs `read`, forking `manage`. The
 * page itself holds no data and is served to anyone; every /api route checks the token
 * (`Authorization: Bearer`, or `?access_token=` for the page's EventSource).
 */
import type { IncomingMessage } from 'node:http';
import type { Clock } from '../clock.ts';
import { ErrorCode, HttpError } from '../errors.ts';
import { grantOf } from '../gateway/authenticate.ts';
import type { JwtVerifier } from '../gateway/jwt.ts';
import { checkScope, type Scope } from '../gateway/scopes.ts';
import { presentedToken, type Grant, type TokenTable } from '../gateway/tokens.ts';

export interface InspectorAuth {
  tokens?: TokenTable;
  jwt?: JwtVerifier;
  clock: Clock;
}

/** Loopback addresses: the inspector may serve them without tokens. */
export const isLoopbackHost = (host: string) => host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);

const reachesAll = (g: Grant) => g.prefix === '' && g.tag === undefined && g.tenant === '*';

/** The grant of a request to an /api route needing `scope`; throws 401 (no, unknown, expired token) or 403. */
export async function inspectorGrant(req: IncomingMessage, url: URL, auth: InspectorAuth, scope: Scope): Promise<Grant> {
  const presented = presentedToken(req.headers.authorization, url.searchParams);
  if (presented === undefined)
    throw new HttpError(401, 'unauthorized', 'This inspector needs a token: send Authorization: Bearer <token>, or open the page as /#access_token=<token>.');
  const grant = await grantOf(presented, { ...(auth.tokens ? { tokens: auth.tokens } : {}), ...(auth.jwt ? { jwt: auth.jwt } : {}), now: auth.clock.now() });
  if (!grant)
    throw new HttpError(
      401,
      'unauthorized',
      'Unknown or expired token: check it against the gateway tokens file, or get a new one from the identity provider.',
    );
  if (!reachesAll(grant))
    throw new HttpError(
      403,
      ErrorCode.PermissionDenied,
      `Token ${grant.name} does not reach every session: the inspector shows them all, so it takes tokens with "sessions": "*", "tenant": "*" and no tag.`,
    );
  checkScope(grant, scope, scope === 'manage' ? 'forking from the inspector' : 'the inspector');
  return grant;
}
