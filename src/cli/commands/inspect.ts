/**
 * `sessiond inspect`: the inspector over a log at rest (`--db`, opened read-only) or a running fleet
 * (`--nats`, e.g. as the observer), taking no work and appending nothing. Loopback unless `--host`;
 * beyond it, the gateway's tokens. See
 * docs/inspector.md#sessiond-inspect-read-only-over-a-log-at-rest-or-a-fleet.
 */
import type { Command } from 'commander';
import { UsageError, messageOf } from '../../errors.ts';
import { DEFAULT_INSPECTOR_HOST, startInspector } from '../../inspector/server.ts';
import { sqliteInspectorIndex } from '../../inspector/sqlite-index.ts';
import type { CliContext } from '../context.ts';
import { openLog, type LogOptions } from '../log-options.ts';
import { addNatsOptions } from '../nats-options.ts';
import { port } from '../options.ts';
import { addAuthOptions, gatewayJwt, gatewayTokens, type AuthFlags } from '../gateway-options.ts';
import { isLoopbackHost } from '../../inspector/auth.ts';

export const DEFAULT_INSPECT_PORT = 4600;

interface InspectOptions extends LogOptions, AuthFlags {
  port: number;
  host: string;
}

export function registerInspect(program: Command, ctx: CliContext): void {
  const command = program
    .command('inspect')
    .description('serve the inspector read-only over a log at rest (--db FILE) or a running fleet (--nats URL); takes no work')
    .option('--db <file>', 'an existing SQLite database (opened read-only)', ctx.defaultDb)
    .option('--port <port>', 'port to serve on', port('--port'), DEFAULT_INSPECT_PORT)
    .option('--host <address>', 'address to bind (127.0.0.1: this machine only; any other needs --tokens or --jwks)', DEFAULT_INSPECTOR_HOST);
  addAuthOptions(command);
  addNatsOptions(command, ctx, 'observer').action(async (opts: InspectOptions) => {
    // listen for Ctrl-C before anything else, so an early one still stops cleanly
    const stop = new Promise<string>((resolve) => {
      process.once('SIGINT', () => resolve('SIGINT'));
      process.once('SIGTERM', () => resolve('SIGTERM'));
    });
    const tokens = gatewayTokens(opts, ctx);
    const jwt = gatewayJwt(opts, ctx);
    const auth = { ...(tokens ? { tokens: tokens.table } : {}), ...(jwt ? { jwt } : {}) };
    if (!tokens && !jwt && !isLoopbackHost(opts.host))
      throw new UsageError(
        `Refusing to serve the inspector on ${opts.host} without tokens: anyone who reaches it would read every session's prompts and live events. Give the gateway's tokens (--tokens FILE or SESSIOND_GATEWAY_TOKENS, or --jwks for signed tokens; docs/inspector.md), or bind 127.0.0.1.`,
      );
    const opened = await openLog(opts, ctx, { readonly: true });
    try {
      const index = opened.db ? sqliteInspectorIndex(opened.db) : undefined;
      const inspector = await startInspector({
        log: opened.log,
        // what a worker's inspector indexed in the file (read-only: what this one adds stays in memory)
        ...(index ? { index } : {}),
        port: opts.port,
        host: opts.host,
        ...auth,
        onError: (err) => ctx.err(`sessiond inspect: ${messageOf(err)}`),
      });
      ctx.out(`sessiond inspector on ${inspector.url} (read-only: it takes no work and writes nothing)`);
      ctx.out(`  over ${opened.describe}`);
      if (tokens || jwt)
        ctx.out(
          `  tokens: ${[...(tokens ? [`${tokens.table.size} from ${tokens.from}`] : []), ...(jwt ? [`signed, verified against ${jwt.from}`] : [])].join(', ')} (read scope and every session; fork needs manage). Open ${inspector.url}#access_token=<token>`,
        );
      ctx.out("  sessions with live state, each one's state chart, conversation, timeline and time travel. Stop it with Ctrl-C.");
      const signal = await stop;
      await inspector.close();
      ctx.out(`${signal}: inspector stopped`);
    } finally {
      await opened.close();
      tokens?.table.close?.();
      jwt?.close();
    }
  });
}
