/**
 * `--db FILE` or `--nats URL [--nats-user U --nats-pass P]`: which event log a command talks to.
 * Defaults come from SESSIOND_DB / SESSIOND_NATS (read once, in CliContext).
 */
import type { Command } from 'commander';
import type { EventLog } from '../events/event-log.ts';
import { openDatabase, type Db } from '../storage/sqlite.ts';
import { migrate } from '../storage/migrate.ts';
import { SqliteEventLog } from '../storage/sqlite-event-log.ts';
import { JetStreamEventLog } from '../nats/jetstream-event-log.ts';
import type { CliContext } from './context.ts';

export interface LogOptions { db: string; nats?: string; natsUser?: string; natsPass?: string }

export function addLogOptions(cmd: Command, ctx: CliContext): Command {
  return cmd
    .option('--db <file>', 'SQLite database file (the embedded log)', ctx.defaultDb)
    .option('--nats <url>', 'use the JetStream log on this NATS server instead', ctx.defaultNats)
    .option('--nats-user <user>', 'NATS user', ctx.env.SESSIOND_NATS_USER)
    .option('--nats-pass <password>', 'NATS password', ctx.env.SESSIOND_NATS_PASS);
}

export interface OpenedLog {
  log: EventLog;
  /** The SQLite database when the log is embedded. */
  db?: Db;
  describe: string;
  close(): Promise<void>;
}

export async function openLog(opts: LogOptions, options: { readonly?: boolean } = {}): Promise<OpenedLog> {
  if (opts.nats) {
    const log = await JetStreamEventLog.open({
      connection: { servers: opts.nats, ...(opts.natsUser ? { user: opts.natsUser } : {}), ...(opts.natsPass ? { pass: opts.natsPass } : {}) },
      ensureStream: !options.readonly,
    });
    return { log, describe: `NATS ${opts.nats} (stream ${log.stream})`, close: () => log.close() };
  }
  const db = openDatabase(opts.db);
  migrate(db);
  const log = new SqliteEventLog(db);
  return { log, db, describe: opts.db, close: async () => { await log.close(); db.close(); } };
}
