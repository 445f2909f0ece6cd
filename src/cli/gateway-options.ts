/**
 * The gateway's flags (`sessiond serve`, `sessiond start --http`), parsed once:
 *
 *   --http <port>            serve the HTTP and SSE gateway on this port (0: a free one, printed)
 *   --http-host <address>    bind address (default 127.0.0.1; anything else needs tokens)
 *   --tokens <file>          bearer tokens and their reach (JSON; default SESSIOND_GATEWAY_TOKENS)
 *   --cors-origin <origin>   an origin whose pages may call it (repeatable; * for any)
 *   --max-body-bytes <n>     largest request body
 *   --token-limit <q=n>      every token's quota q (repeatable; a token's own "limits" go over it)
 *   --tenant-limit <q=n>     every tenant's quota q, over all its tokens (repeatable)
 */
import { readFileSync } from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import { UsageError, messageOf } from '../errors.ts';
import { parseTokens, type TokenTable } from '../gateway/tokens.ts';
import { QUOTA_NAMES, parseQuotas, type Quotas } from '../gateway/quotas.ts';
import type { GatewayOptions } from '../gateway/server.ts';
import type { CliContext } from './context.ts';
import { positiveInt } from './options.ts';

export interface GatewayFlags {
  http?: number;
  httpHost?: string;
  tokens?: string;
  corsOrigin?: string[];
  maxBodyBytes?: number;
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
  return (required ? command.requiredOption(http, what, httpPort) : command.option(http, what, httpPort))
    .option('--http-host <address>', 'the gateway binds this address (default 127.0.0.1; any other needs --tokens)')
    .option('--tokens <file>', 'bearer tokens and what each may reach, JSON (default: SESSIOND_GATEWAY_TOKENS); docs/gateway.md')
    .option('--cors-origin <origin>', 'an origin whose pages may call the gateway, e.g. https://app.example (repeatable; * for any)', collect)
    .option('--max-body-bytes <n>', 'largest request body the gateway reads (default: what the largest prompt needs)', positiveInt('--max-body-bytes'))
    .option('--token-limit <quota=n>', `every token's quota, e.g. streams=20 (repeatable; ${QUOTA_NAMES.join(', ')}); docs/gateway.md`, collect)
    .option('--tenant-limit <quota=n>', "every tenant's quota over all its tokens, e.g. sessionsPerHour=5000 (repeatable)", collect);
}

/** The tokens from --tokens FILE or SESSIOND_GATEWAY_TOKENS, undefined when neither is given. */
export function gatewayTokens(flags: GatewayFlags, ctx: CliContext): { table: TokenTable; from: string } | undefined {
  const env = ctx.env.SESSIOND_GATEWAY_TOKENS;
  if (flags.tokens !== undefined && env) throw new UsageError('Give the gateway tokens once: --tokens FILE or SESSIOND_GATEWAY_TOKENS, not both.');
  if (flags.tokens !== undefined) {
    let text: string;
    try {
      text = readFileSync(flags.tokens, 'utf8');
    } catch (err) {
      throw new UsageError(`--tokens ${flags.tokens}: cannot read it (${messageOf(err)}).`);
    }
    return { table: parseTokens(text, flags.tokens), from: flags.tokens };
  }
  if (env) return { table: parseTokens(env, 'SESSIOND_GATEWAY_TOKENS'), from: 'SESSIOND_GATEWAY_TOKENS' };
  return undefined;
}

/** The gateway's options from the flags (but the sessions and live source). */
export function gatewayOptions(flags: GatewayFlags, ctx: CliContext): Omit<GatewayOptions, 'sessions' | 'live'> & { tokensFrom?: string } {
  const tokens = gatewayTokens(flags, ctx);
  const origins = flags.corsOrigin;
  return {
    port: flags.http ?? 0,
    ...(flags.httpHost ? { host: flags.httpHost } : {}),
    ...(tokens ? { tokens: tokens.table, tokensFrom: tokens.from } : {}),
    ...(origins && origins.length > 0 ? { corsOrigins: origins.includes('*') ? '*' : origins } : {}),
    ...(flags.maxBodyBytes !== undefined ? { maxBodyBytes: flags.maxBodyBytes } : {}),
    limits: { token: limitFlags('--token-limit', flags.tokenLimit), tenant: limitFlags('--tenant-limit', flags.tenantLimit) },
  };
}

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
export function gatewayLine(url: string, tokens: { size: number } | undefined, from: string | undefined): string {
  return `  gateway: ${url}v1/sessions  (${tokens ? `${tokens.size} token${tokens.size === 1 ? '' : 's'} from ${from}` : 'no tokens: every session, loopback only'}; SSE at /v1/sessions/<id>/events)`;
}
