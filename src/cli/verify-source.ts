/**
 * Which log `sessiond verify` reads: a positional FILE (an export file, or a SQLite database when
 * the file starts as one), else `--nats` (or SESSIOND_NATS), else `--db`. Databases are opened
 * read-only and never migrated (an older schema is upgraded on a temporary copy, upgrade-check.ts);
 * a JetStream stream is read, never created.
 */
import { existsSync, openSync, readSync, closeSync } from 'node:fs';
import { NotFoundError } from '../errors.ts';
import { JetStreamEventLog } from '../nats/jetstream-event-log.ts';
import { exportSource } from '../verify/export-source.ts';
import { jetStreamSnapshots } from '../verify/jetstream-snapshots.ts';
import { portSource, quarantineCollector } from '../verify/port-source.ts';
import { sqliteSource } from '../verify/sqlite-source.ts';
import type { StoredLog } from '../verify/stored-log.ts';
import { checkUpgrade } from '../verify/upgrade-check.ts';
import type { CliContext } from './context.ts';
import { openExisting, type LogOptions } from './log-options.ts';
import { describeNats, natsConnectionOptions } from './nats-options.ts';

const SQLITE_MAGIC = 'SQLite format 3\u0000';

function isSqliteFile(file: string): boolean {
  const fd = openSync(file, 'r');
  try {
    const head = Buffer.alloc(16);
    return readSync(fd, head, 0, 16, 0) === 16 && head.toString('latin1') === SQLITE_MAGIC;
  } finally {
    closeSync(fd);
  }
}

async function openDb(file: string): Promise<StoredLog> {
  const db = openExisting(file);
  try {
    const upgrade = await checkUpgrade(db, file);
    const source = sqliteSource(db, {
      describe: file,
      notes: upgrade.notes,
      projectionDb: upgrade.projectionDb ?? null,
      close: async () => {
        upgrade.close();
        db.close();
      },
    });
    source.problems.push(...upgrade.problems);
    return source;
  } catch (err) {
    db.close();
    throw err;
  }
}

export async function openVerifySource(file: string | undefined, opts: LogOptions, ctx: CliContext): Promise<StoredLog> {
  if (file !== undefined) {
    if (!existsSync(file)) {
      throw new NotFoundError(
        `No such file: ${file}. Give verify an export file (sessiond export --out FILE) or a database file, or use --db FILE or --nats URL.`,
      );
    }
    return isSqliteFile(file) ? openDb(file) : exportSource(file);
  }
  const nats = natsConnectionOptions(opts, ctx, 'sessiond-verify');
  if (!nats) return openDb(opts.db);
  const quarantine = quarantineCollector();
  const log = await JetStreamEventLog.open({ connection: nats, ensureStream: false, onQuarantine: quarantine.onQuarantine });
  const notes = [`read NATS ${describeNats(nats)} (stream ${log.stream}), read-only`];
  return portSource(log, { describe: `NATS ${describeNats(nats)} (stream ${log.stream})`, quarantine, notes, snapshot: jetStreamSnapshots(log.nc, notes) });
}
