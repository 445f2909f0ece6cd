/**
 * `--db FILE`, or the NATS flags of `nats-options.ts`: which event log a command talks to.
 * Defaults come from SESSIOND_DB / SESSIOND_NATS* (read once, in CliContext).
 */
import type { Command } from 'commander';
import type { EventLog } from '../events/event-log.ts';
import { openDatabase, type Db } from '../storage/sqlite.ts';
import { migrate } from '../storage/migrate.ts';
import { SqliteEventLog } from '../storage/sqlite-event-log.ts';
import { JetStreamEventLog } from '../nats/jetstream-event-log.ts';
import type { CliContext } from './context.ts';
import type { QuarantineHandler } from '../events/quarantine.ts';
import { addNatsOptions, describeNats, natsConnectionOptions, type NatsFlags } from './nats-options.ts';

export interface LogOptions extends NatsFlags { db: string }

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

export async function openLog(opts: LogOptions, ctx: CliContext, options: { readonly?: boolean; onQuarantine?: QuarantineHandler } = {}): Promise<OpenedLog> {
  const nats = natsConnectionOptions(opts, ctx, 'sessiond-cli');
  if (nats) {
    const log = await JetStreamEventLog.open({ connection: nats, ensureStream: !options.readonly, ...(options.onQuarantine ? { onQuarantine: options.onQuarantine } : {}) });
    return { log, describe: `NATS ${describeNats(nats)} (stream ${log.stream})`, close: () => log.close() };
  }
  const db = openDatabase(opts.db);
  migrate(db);
  const log = new SqliteEventLog(db);
  return { log, db, describe: opts.db, close: async () => { await log.close(); db.close(); } };
}
