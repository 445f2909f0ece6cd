/**
 * `--db FILE`, or the NATS flags of `nats-options.ts`: which event log a command talks to.
 * Defaults come from SESSIOND_DB / SESSIOND_NATS* (read once, in CliContext). Read-only commands
 * (status, tail, check, export) open an existing database read-only and never migrate it.
 */
import type { Command } from 'commander';
import type { EventLog } from '../events/event-log.ts';
import { openDatabase, type Db } from '../storage/sqlite/database.ts';
import { existsSync } from 'node:fs';
import { migrate } from '../storage/sqlite/migrate.ts';
import { LATEST_SCHEMA_VERSION } from '../storage/sqlite/migrations/index.ts';
import { ErrorCode, SessiondError } from '../errors.ts';
import { SqliteEventLog } from '../storage/sqlite/sqlite-event-log.ts';
import { JetStreamEventLog } from '../nats/jetstream-event-log.ts';
import type { CliContext } from './context.ts';
import type { QuarantineHandler } from '../events/quarantine.ts';
import { addNatsOptions, describeNats, natsConnectionOptions, type NatsFlags } from './nats-options.ts';

export interface LogOptions extends NatsFlags {
  db: string;
  /** `sessiond prompt --allow-url-host`: what a prompt admitted into the file may name (open-sessions.ts). */
  allowUrlHost?: string[];
}

export function addLogOptions(cmd: Command, ctx: CliContext): Command {
  return addNatsOptions(cmd.option('--db <file>', 'SQLite database file (the embedded log)', ctx.defaultDb), ctx, 'client');
}

export interface OpenedLog {
  log: EventLog;
  /** The SQLite database when the log is embedded. */
  db?: Db;
  describe: string;
  close(): Promise<void>;
}

/**
 * A database a read-only command reads: opened read-only (nothing created, nothing migrated), and
 * refused with what is wrong when it is missing, not sessiond's, or newer than this build.
 */
export function openExisting(file: string): Db {
  if (file !== ':memory:' && !existsSync(file)) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `No database at ${file}: give --db the file a worker writes (sessiond start --db FILE), or set SESSIOND_DB.`,
    );
  }
  const db = openDatabase(file, { readonly: true });
  try {
    const tracked = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get() !== undefined;
    const version = tracked ? (db.prepare('SELECT COALESCE(MAX(version), 0) FROM schema_migrations').pluck().get() as number) : 0;
    if (version === 0) {
      throw new SessiondError(
        ErrorCode.InvalidOption,
        `${file} is not a sessiond database (it has no sessiond schema): point --db at a file sessiond created. Read-only commands never change it.`,
      );
    }
    if (version > LATEST_SCHEMA_VERSION) {
      throw new SessiondError(
        ErrorCode.SchemaTooNew,
        `${file} was written by a newer sessiond (schema version ${version}; this build reads up to ${LATEST_SCHEMA_VERSION}). Upgrade sessiond to read it.`,
      );
    }
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

export async function openLog(opts: LogOptions, ctx: CliContext, options: { readonly?: boolean; onQuarantine?: QuarantineHandler } = {}): Promise<OpenedLog> {
  const nats = natsConnectionOptions(opts, ctx, 'sessiond-cli');
  if (nats) {
    const log = await JetStreamEventLog.open({
      connection: nats,
      ensureStream: !options.readonly,
      ...(options.onQuarantine ? { onQuarantine: options.onQuarantine } : {}),
    });
    return { log, describe: `NATS ${describeNats(nats)} (stream ${log.stream})`, close: () => log.close() };
  }
  const db = options.readonly ? openExisting(opts.db) : openDatabase(opts.db);
  if (!options.readonly) migrate(db);
  const log = new SqliteEventLog(db);
  return {
    log,
    db,
    describe: opts.db,
    close: async () => {
      await log.close();
      db.close();
    },
  };
}
