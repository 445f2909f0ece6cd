/**
 * The gateway's flags (`sessiond serve`, `sessiond start --http`), parsed once: `--http`,
 * `--http-host`, `--tokens`, `--jwks` and `--jwt-*`, `--cors-origin`, `--max-body-bytes`,
 * `--body-timeout`, `--token-limit`, `--tenant-limit`. What each does: docs/gateway.md.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { UsageError, messageOf } from '../errors.ts';
import { systemClock } from '../clock.ts';
import { parseTokens, type TokenTable } from '../gateway/tokens.ts';
import { tokenFile } from '../gateway/token-file.ts';
import { jwtVerifier, type JwtVerifier } from '../gateway/jwt.ts';
import { DEFAULT_CLAIMS, type JwtClaimNames } from '../gateway/jwt-claims.ts';
import { QUOTA_NAMES, parseQuotas, type Quotas } from '../gateway/quotas.ts';
import type { GatewayOptions } from '../gateway/server.ts';
import type { CliContext } from './context.ts';
import { duration, positiveInt } from './options.ts';

/** Who may call: tokens and signed tokens (the gateway's, and the inspector's beyond loopback). */
export interface AuthFlags {
  tokens?: string;
  jwks?: string;
  jwtIssuer?: string;
  jwtAudience?: string;
  jwtClockTolerance?: number;
  jwtClaim?: string[];
}

export interface GatewayFlags extends AuthFlags {
  http?: number;
  httpHost?: string;
  corsOrigin?: string[];
  maxBodyBytes?: number;
  bodyTimeout?: number;
  tokenLimit?: string[];
  tenantLimit?: string[];
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

function httpPort(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError(`--http must be a port from 0 to 65535 (got "${value}"; 0 picks a free one).`);
  return n;
}

export function addGatewayOptions(command: Command, required: boolean): Command {
  const http = '--http <port>';
  const what = 'serve the HTTP and SSE gateway on http://127.0.0.1:PORT (0 picks a free port)';
  return addAuthOptions(
    (required ? command.requiredOption(http, what, httpPort) : command.option(http, what, httpPort)).option(
      '--http-host <address>',
      'the gateway binds this address (default 127.0.0.1; any other needs --tokens or --jwks)',
    ),
  )
    .option('--cors-origin <origin>', 'an origin whose pages may call the gateway, e.g. https://app.example (repeatable; * for any)', collect)
    .option('--max-body-bytes <n>', 'largest request body the gateway reads (default 12 MiB: a photo of up to 9 MB as base64)', positiveInt('--max-body-bytes'))
    .option(
      '--body-timeout <duration>',
      'a request body not all there after this long gets 408 and its connection closed (default 15s)',
      duration('--body-timeout'),
    )

    .option('--token-limit <quota=n>', `every token's quota, e.g. streams=20 (repeatable; ${QUOTA_NAMES.join(', ')}); docs/gateway.md`, collect)
    .option(
      '--tenant-limit <quota=n>',
      "every tenant's quota over all its tokens, e.g. sessionsPerHour=5000 (repeatable); on a NATS worker also each tenant user's commands it serves",
      collect,
    );
}

/** --tokens, --jwks and the JWT flags. */
export function addAuthOptions(command: Command): Command {
  return command
    .option('--tokens <file>', 'bearer tokens and what each may reach, JSON, read again when it changes (default: SESSIOND_GATEWAY_TOKENS); docs/gateway.md')
    .option(
      '--jwks <file|url>',
      "verify signed tokens (JWTs, RS256/ES256) against this JWKS: a file (read again on change) or the identity provider's https jwks_uri",
    )
    .option('--jwt-issuer <iss>', 'a JWT must carry this issuer (iss)')
    .option('--jwt-audience <aud>', 'a JWT must carry this audience (aud)')
    .option('--jwt-clock-tolerance <seconds>', 'clock skew allowed on exp and nbf (default 30)', nonNegativeSeconds)
    .option('--jwt-claim <what=claim>', `the claim a JWT's reach comes from: sessions, scope, tenant or tag (repeatable; default ${claimDefaults})`, collect);
}

const claimDefaults = Object.entries(DEFAULT_CLAIMS)
  .map(([k, v]) => `${k}=${v}`)
  .join(' ');

function nonNegativeSeconds(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 600) throw new InvalidArgumentError(`--jwt-clock-tolerance must be 0 to 600 seconds (got "${value}").`);
  return n;
}

/** The claim names from --jwt-claim what=claim flags. */
function claimNames(flags: string[] | undefined): Partial<JwtClaimNames> {
  const names: Partial<JwtClaimNames> = {};
  for (const flag of flags ?? []) {
    const m = /^(sessions|scope|tenant|tag)=([\w:./-]{1,100})$/.exec(flag);
    if (!m)
      throw new UsageError(
        `--jwt-claim ${flag}: say which claim gives what, as sessions=CLAIM, scope=CLAIM, tenant=CLAIM or tag=CLAIM (default ${claimDefaults}).`,
      );
    names[m[1] as keyof JwtClaimNames] = m[2]!;
  }
  return names;
}

/** One line now, then at most one a minute (counting the rest): refused tokens must not flood the log. */
function throttled(say: (why: string, more: number) => void, everyMs = 60_000): (why: string) => void {
  let last = Number.NEGATIVE_INFINITY;
  let more = 0;
  return (why) => {
    const now = systemClock.now();
    if (now - last < everyMs) {
      more++;
      return;
    }
    say(why, more);
    last = now;
    more = 0;
  };
}

/** The JWT verifier from --jwks and its flags, undefined without --jwks. */
export function gatewayJwt(flags: AuthFlags, ctx: CliContext): JwtVerifier | undefined {
  if (flags.jwks === undefined) {
    const stray = (['jwtIssuer', 'jwtAudience', 'jwtClockTolerance', 'jwtClaim'] as const).filter((k) => flags[k] !== undefined);
    if (stray.length > 0)
      throw new UsageError('--jwt-issuer, --jwt-audience, --jwt-clock-tolerance and --jwt-claim need --jwks (the keys to verify the tokens with).');
    return undefined;
  }
  return jwtVerifier({
    jwks: flags.jwks,
    ...(flags.jwtIssuer === undefined ? {} : { issuer: flags.jwtIssuer }),
    ...(flags.jwtAudience === undefined ? {} : { audience: flags.jwtAudience }),
    ...(flags.jwtClockTolerance === undefined ? {} : { clockToleranceS: flags.jwtClockTolerance }),
    claims: claimNames(flags.jwtClaim),
    onRefused: throttled((why, more) =>
      ctx.err(`sessiond: gateway: a signed token was refused: ${why}${more ? ` (and ${more} more since the last line)` : ''}`),
    ),
    onReload: (o) =>
      ctx.err('error' in o ? `sessiond: gateway: --jwks ${flags.jwks}: ${o.error}` : `sessiond: gateway: read ${o.keys} keys again from ${flags.jwks}`),
  });
}

/** The tokens from --tokens FILE (read again when it changes) or SESSIOND_GATEWAY_TOKENS, undefined when neither is given. */
export function gatewayTokens(flags: AuthFlags, ctx: CliContext): { table: TokenTable; from: string } | undefined {
  const env = ctx.env.SESSIOND_GATEWAY_TOKENS;
  if (flags.tokens !== undefined && env) throw new UsageError('Give the gateway tokens once: --tokens FILE or SESSIOND_GATEWAY_TOKENS, not both.');
  if (flags.tokens !== undefined) {
    const table = tokenFile(flags.tokens, {
      onReload: (o) =>
        ctx.err(
          'error' in o ? `sessiond: gateway: --tokens ${flags.tokens}: ${o.error}` : `sessiond: gateway: read ${o.tokens} tokens again from ${flags.tokens}`,
        ),
    });
    return { table, from: flags.tokens };
  }
  if (env) return { table: parseTokens(env, 'SESSIOND_GATEWAY_TOKENS'), from: 'SESSIOND_GATEWAY_TOKENS' };
  return undefined;
}

/** The gateway's options from the flags (but the sessions and live source). */
export function gatewayOptions(flags: GatewayFlags, ctx: CliContext): Omit<GatewayOptions, 'sessions' | 'live'> & { tokensFrom?: string } {
  const tokens = gatewayTokens(flags, ctx);
  let jwt: JwtVerifier | undefined;
  try {
    jwt = gatewayJwt(flags, ctx);
  } catch (err) {
    tokens?.table.close?.();
    throw err;
  }
  const origins = flags.corsOrigin;
  return {
    port: flags.http ?? 0,
    ...(flags.httpHost ? { host: flags.httpHost } : {}),
    ...(tokens ? { tokens: tokens.table, tokensFrom: tokens.from } : {}),
    ...(jwt ? { jwt } : {}),
    ...(origins && origins.length > 0 ? { corsOrigins: origins.includes('*') ? '*' : origins } : {}),
    ...(flags.maxBodyBytes !== undefined ? { maxBodyBytes: flags.maxBodyBytes } : {}),
    ...(flags.bodyTimeout !== undefined ? { bodyTimeoutMs: flags.bodyTimeout } : {}),
    limits: { token: limitFlags('--token-limit', flags.tokenLimit), tenant: limitFlags('--tenant-limit', flags.tenantLimit) },
  };
}

/** `--tenant-limit` as quotas: the gateway's tenants, and the NATS tenant users a worker serves. */
export const tenantLimitFlags = (flags: GatewayFlags): Partial<Quotas> => limitFlags('--tenant-limit', flags.tenantLimit);

/** `--token-limit streams=20` flags as quotas; a bad one is a usage error saying what. */
function limitFlags(flag: string, values: string[] | undefined): Partial<Quotas> {
  const raw: Record<string, number> = {};
  for (const v of values ?? []) {
    const m = /^(\w+)=(\d+)$/.exec(v);
    if (!m) throw new UsageError(`${flag} ${v}: give QUOTA=N, e.g. ${flag} streams=20 (quotas: ${QUOTA_NAMES.join(', ')}).`);
    raw[m[1]!] = Number(m[2]);
  }
  try {
    return parseQuotas(raw, flag);
  } catch (err) {
    throw new UsageError(`${messageOf(err)}.`);
  }
}

/** The line a command prints once the gateway is up. */
export function gatewayLine(url: string, tokens: { size: number } | undefined, from: string | undefined, jwt?: { from: string }): string {
  const auth = [
    ...(tokens ? [`${tokens.size} token${tokens.size === 1 ? '' : 's'} from ${from}`] : []),
    ...(jwt ? [`signed tokens verified against ${jwt.from}`] : []),
  ];
  return `  gateway: ${url}v1/sessions  (${auth.length > 0 ? auth.join(', ') : 'no tokens: every session, loopback only'}; SSE at /v1/sessions/<id>/events)`;
}
