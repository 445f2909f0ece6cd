/**
 * `sessiond inspect`: the inspector over a log at rest (`--db`, opened read-only) or a running fleet
 * (`--nats`, e.g. as the observer), taking no work and appending nothing. Loopback unless `--host`;
 * beyond it, the gateway's tokens. See
 * docs/inspector.md#sessiond-inspect-read-only-over-a-log-at-rest-or-a-fleet.
 */
import type { Command } from 'commander';
import { UsageError, messageOf } from '../../errors.ts';
import { DEFAULT_INSPECTOR_HOST, startInspector } from '../../inspector/server.ts';
import { dirname, join } from 'node:path';
import { SqliteInspectorIndex, sqliteInspectorIndex } from '../../inspector/sqlite-index.ts';
import { openDatabase, type Db } from '../../storage/sqlite/database.ts';
import { migrate } from '../../storage/sqlite/migrate.ts';
import { SqliteSnapshotStore } from '../../storage/sqlite/sqlite-snapshot-store.ts';
import { systemClock } from '../../clock.ts';
import type { CliContext } from '../context.ts';
import { openLog, type LogOptions } from '../log-options.ts';
import { addNatsOptions } from '../nats-options.ts';
import { port } from '../options.ts';
import { addAuthOptions, gatewayJwt, gatewayTokens, type AuthFlags } from '../gateway-options.ts';
import { isLoopbackHost } from '../../inspector/auth.ts';
import { JetStreamEventLog } from '../../nats/jetstream-event-log.ts';
import { deletionFeed } from '../../nats/deletion-stream.ts';
import { sqliteDeletionFeed } from '../../storage/sqlite/delete-session.ts';

export const DEFAULT_INSPECT_PORT = 4600;

interface InspectOptions extends LogOptions, AuthFlags {
  port: number;
  host: string;
  index?: string;
}

/** Where `sessiond inspect --nats` keeps its index without `--index`: beside the default database. */
export function defaultInspectIndex(defaultDb: string): string {
  return join(dirname(defaultDb), 'inspector-index.db');
}

/** The index file of `--index` (made, or brought to this version's schema): a database holding only the inspector's index. */
function openIndexFile(file: string): Db {
  try {
    const db = openDatabase(file);
    migrate(db);
    return db;
  } catch (err) {
    throw new UsageError(
      `Cannot use ${file} as the inspector's index: ${messageOf(err)}. Give --index a writable file path (it is made if missing), or remove a file that is not one.`,
    );
  }
}

export function registerInspect(program: Command, ctx: CliContext): void {
  const command = program
    .command('inspect')
    .description('serve the inspector read-only over a log at rest (--db FILE) or a running fleet (--nats URL); takes no work')
    .option('--db <file>', 'an existing SQLite database (opened read-only)', ctx.defaultDb)
    .option('--port <port>', 'port to serve on', port('--port'), DEFAULT_INSPECT_PORT)
    .option('--host <address>', 'address to bind (127.0.0.1: this machine only; any other needs --tokens or --jwks)', DEFAULT_INSPECTOR_HOST)
    .option(
      '--index <file>',
      `a SQLite file to keep the inspector's index in, so the next start reads only the log's tail (default with --nats: ${defaultInspectIndex(ctx.defaultDb)}; with --db: the database's own, read-only)`,
    );
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
    const indexFile = opts.index ?? (opened.db ? undefined : defaultInspectIndex(ctx.defaultDb));
    let indexDb: Db | undefined;
    try {
      indexDb = indexFile === undefined ? undefined : openIndexFile(indexFile);
      const index = indexDb
        ? new SqliteInspectorIndex(indexDb, undefined, (err) =>
            ctx.err(`sessiond inspect: the index in ${indexFile} took no write (${messageOf(err)}); kept in memory`),
          )
        : opened.db
          ? sqliteInspectorIndex(opened.db)
          : undefined;
      const deletionError = (err: unknown) => ctx.err(`sessiond inspect: deletions: ${messageOf(err)}`);
      const deletions = opened.db
        ? sqliteDeletionFeed(opened.db, systemClock, deletionError)
        : opened.log instanceof JetStreamEventLog
          ? deletionFeed(opened.log.nc, deletionError)
          : undefined;
      const inspector = await startInspector({
        log: opened.log,
        // what a worker's inspector indexed in the file (read-only: what this one adds stays in memory)
        ...(index ? { index } : {}),
        // the workers' snapshots in the file: views near a session's head start from them while the index catches up
        ...(opened.db ? { snapshots: new SqliteSnapshotStore(opened.db, systemClock) } : {}),
        // the sessions deleted (the file's records, or the NATS audit stream): forgotten from the list and the index
        ...(deletions ? { deletions } : {}),
        port: opts.port,
        host: opts.host,
        ...auth,
        onError: (err) => ctx.err(`sessiond inspect: ${messageOf(err)}`),
      });
      ctx.out(`sessiond inspector on ${inspector.url} (read-only: it takes no work and writes nothing)`);
      ctx.out(`  over ${opened.describe}`);
      const resumed = `resumed after log position ${inspector.resumedAfter}: reads only what the log gained since`;
      if (indexFile !== undefined) ctx.out(`  index: ${indexFile} (${inspector.resumedAfter > 0 ? resumed : 'new: follows the log from its start'})`);
      else if (opened.db)
        ctx.out(
          `  index: the one the workers keep in the file (${inspector.resumedAfter > 0 ? resumed : 'none kept yet: follows the log from its start, in memory'})`,
        );
      if (tokens || jwt)
        ctx.out(
          `  tokens: ${[...(tokens ? [`${tokens.table.size} from ${tokens.from}`] : []), ...(jwt ? [`signed, verified against ${jwt.from}`] : [])].join(', ')} (read scope and every session; fork needs manage). Open ${inspector.url}#access_token=<token>`,
        );
      ctx.out("  sessions with live state, each one's state chart, conversation, timeline and time travel. Stop it with Ctrl-C.");
      const signal = await stop;
      await inspector.close();
      ctx.out(`${signal}: inspector stopped`);
    } finally {
      indexDb?.close();
      await opened.close();
      tokens?.table.close?.();
      jwt?.close();
    }
  });
}
