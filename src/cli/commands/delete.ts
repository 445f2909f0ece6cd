/**
 * `sessiond delete SESSION --yes`, `sessiond retain --settled-before TIME|AGO [--archive FILE]` and
 * `sessiond deletions` (the audit): erasure and retention, a turn in progress cancelled first; over
 * NATS as the admin user (docs/operating.md#deleting-sessions, docs/nats.md#deleting-a-session).
 */
import { whoAmI } from '../who.ts';
import type { Command } from 'commander';
import { isoTime, systemClock } from '../../clock.ts';
import { UsageError } from '../../errors.ts';
import { randomIds, validateId } from '../../ids.ts';
import { CommandHandler } from '../../execution/command-handler.ts';
import { ExportWriter } from '../../export/export-file.ts';
import { catchUpProjection } from '../../projector/catch-up.ts';
import { deleteSession } from '../../sessions/delete.ts';
import type { SessionEraser } from '../../sessions/session-eraser.ts';
import { sqliteEraser } from '../../sessions/sqlite-eraser.ts';
import { SqliteBlobStore } from '../../storage/sqlite/sqlite-blob-store.ts';
import { isSettledPoint } from '../../sessions/fork-point.ts';
import { deletionRecords, type DeletionRecord } from '../../storage/sqlite/delete-session.ts';
import type { Db } from '../../storage/sqlite/database.ts';
import type { CliContext } from '../context.ts';
import { positiveInt } from '../options.ts';
import { addLogOptions, openLog, type LogOptions, type OpenedLog } from '../log-options.ts';
import { timeOrAgo } from './sessions-list.ts';
import { natsConnectionOptions } from '../nats-options.ts';
import { JetStreamEventLog } from '../../nats/jetstream-event-log.ts';
import { natsEraser } from '../../nats/nats-eraser.ts';
import { readDeletions } from '../../nats/deletion-stream.ts';
import { subjects } from '../../nats/subjects.ts';
import { jetstreamManager } from '@nats-io/jetstream';
import type { EventLog } from '../../events/event-log.ts';
import type { DeleteOptions } from '../../sessions/delete.ts';

const iso = isoTime;

/** The audit line of a deletion (never the content). */
export function describeDeletion(r: DeletionRecord): string {
  return `deleted ${r.sessionId} (${r.events} events, last seq ${r.lastSeq}) at ${iso(r.deletedAt)} by ${r.deletedBy}${r.reason ? `: ${r.reason}` : ''}${r.archivedTo ? `; archived to ${r.archivedTo}` : ''}${r.blobs && r.blobs.removed + r.blobs.shared + r.blobs.left > 0 ? `; ${describeBlobs(r.blobs)}` : ''}`;
}

/** What a delete did with the session's blobs, in plain words. */
function describeBlobs(b: NonNullable<DeletionRecord['blobs']>): string {
  const n = (k: number) => `${k} blob${k === 1 ? '' : 's'}`;
  const parts = [`${n(b.removed)} removed`];
  if (b.shared > 0) parts.push(`${n(b.shared)} kept (another session references ${b.shared === 1 ? 'it' : 'them'})`);
  if (b.left > 0) parts.push(`${n(b.left)} stored within the grace period left to the blob sweep`);
  return parts.join(', ');
}

/**
 * Where a delete happens: a SQLite file (one transaction) or NATS as the admin user (a purge and an
 * audit message), each through its eraser and the one delete flow. `settledBefore` lists the
 * sessions of the log (retain's candidates, between turns and last changed before a time).
 */
interface DeleteTarget {
  log: EventLog;
  describe: string;
  /** The one delete flow (sessions/delete.ts) with the log's eraser. */
  delete(sessionId: string, options: DeleteOptions): Promise<DeletionRecord>;
  /** Sessions last changed before `before`, between turns at their head. */
  settledBefore(before: number): Promise<string[]>;
  deletions(limit: number): Promise<DeletionRecord[]>;
}

const deleteWith =
  (handler: CommandHandler, eraser: SessionEraser) =>
  (sessionId: string, options: DeleteOptions): Promise<DeletionRecord> =>
    deleteSession(handler, eraser, sessionId, options);

async function withTarget<T>(opts: LogOptions, ctx: CliContext, verb: string, use: (target: DeleteTarget) => Promise<T>): Promise<T> {
  const nats = natsConnectionOptions(opts, ctx, `sessiond-${verb}`);
  if (nats) {
    const log = await JetStreamEventLog.open({ connection: nats, ensureStream: false });
    try {
      const eraser = natsEraser(log, systemClock);
      if (verb !== 'deletions') await eraser.check(); // refused before anything is listed or archived
      const handler = new CommandHandler(log, systemClock, randomIds);
      return await use({
        log,
        describe: `NATS ${nats.servers} (stream ${log.stream})`,
        delete: deleteWith(handler, eraser),
        async settledBefore(before) {
          // the sessions are the stream's subjects; each folded from the log (no projection here)
          const info = await (await jetstreamManager(log.nc)).streams.info(log.stream, { subjects_filter: subjects.allEvents });
          const old: string[] = [];
          for (const subject of Object.keys(info.state.subjects ?? {}).sort()) {
            const id = subjects.sessionOfEventsSubject(subject);
            const snapshot = await handler.load(id);
            const last = (await log.readSession(id, { afterSeq: Math.max(0, snapshot.context.seq - 1) })).at(-1);
            // as on SQLite: between turns, and no input waiting
            if (last && last.time < before && isSettledPoint(snapshot) && snapshot.context.pending.length === 0) old.push(id);
          }
          return old;
        },
        deletions: async (limit) => (await readDeletions(log.nc)).reverse().slice(0, limit),
      });
    } finally {
      await log.close();
    }
  }
  const opened = await openLog(opts, ctx);
  try {
    const { db, log, describe } = opened as OpenedLog & { db: Db };
    const handler = new CommandHandler(log, systemClock, randomIds);
    return await use({
      log,
      describe,
      delete: deleteWith(handler, sqliteEraser(db, systemClock, { store: new SqliteBlobStore(db, systemClock), log })),
      async settledBefore(before) {
        await catchUpProjection(db, log);
        const rows = db
          .prepare(
            `SELECT session_id FROM session WHERE time_updated < ? AND state IN ('idle', 'settled') AND waiting = 0 AND pending_inputs = 0 ORDER BY time_updated`,
          )
          .all(before) as { session_id: string }[];
        // the projection proposes, the log decides: only sessions between turns at their head
        const old: string[] = [];
        for (const { session_id } of rows) if (isSettledPoint(await handler.load(session_id))) old.push(session_id);
        return old;
      },
      deletions: async (limit) => deletionRecords(db, limit),
    });
  } finally {
    await opened.close();
  }
}

export function registerDelete(program: Command, ctx: CliContext): void {
  addLogOptions(
    program
      .command('delete')
      .description("delete a session's events, rows, snapshot and inputs for good (a running turn is cancelled first); the audit keeps who, when and why")
      .argument('<session>', 'session id')
      .option('--yes', 'really delete it (required: there is no undo)')
      .option('--reason <text>', 'why (recorded in the audit, at most 1,000 characters)')
      .option('--by <who>', 'who deletes (recorded; default user@host)'),
    ctx,
  ).action(async (session: string, opts: LogOptions & { yes?: boolean; reason?: string; by?: string }) => {
    validateId(session, 'session id');
    if (!opts.yes)
      throw new UsageError(
        `sessiond delete ${session} deletes it for good: add --yes to confirm (export it first with sessiond export --session ${session} --out FILE to keep a copy).`,
      );
    await withTarget(opts, ctx, 'delete', async (target) => {
      const r = await target.delete(session, { by: opts.by ?? whoAmI(), ...(opts.reason ? { reason: opts.reason } : {}) });
      ctx.out(describeDeletion(r));
    });
  });

  addLogOptions(
    program
      .command('retain')
      .description('delete the sessions between turns whose last event is older than a time, archiving them first with --archive')
      .requiredOption('--settled-before <time>', 'a time (2026-06-01T00:00:00Z) or a duration back (90d)', timeOrAgo('--settled-before'))
      .option('--archive <file>', 'export them to this file first (sessiond replay reads it); nothing is deleted if it cannot be written')
      .option('--dry-run', 'list what would be deleted, delete nothing')
      .option('--yes', 'really delete them')
      .option('--by <who>', 'who deletes (recorded; default user@host)'),
    ctx,
  ).action(async (opts: LogOptions & { settledBefore: number; archive?: string; dryRun?: boolean; yes?: boolean; by?: string }) => {
    if (!opts.yes && !opts.dryRun) throw new UsageError('sessiond retain deletes sessions for good: add --yes to confirm, or --dry-run to see which first.');
    await withTarget(opts, ctx, 'retain', async ({ log, describe, settledBefore, delete: deleteOne }) => {
      const old = await settledBefore(opts.settledBefore);
      const when = iso(opts.settledBefore);
      if (old.length === 0) {
        ctx.out(`no session in ${describe} is between turns with its last event before ${when}; nothing to do`);
        return;
      }
      if (opts.dryRun) {
        ctx.out(`${old.length} session${old.length === 1 ? '' : 's'} between turns, last changed before ${when}, would be deleted:`);
        for (const id of old) ctx.out(`  ${id}`);
        return;
      }
      if (opts.archive) {
        const writer = await ExportWriter.create(opts.archive, { created: systemClock.now(), source: describe, events: -1 });
        let events = 0;
        try {
          for (const id of old) {
            for (let after = 0; ; ) {
              const page = await log.readSession(id, { afterSeq: after, limit: 5000 });
              if (page.length === 0) break;
              await writer.write(page);
              events += page.length;
              after = page[page.length - 1]!.seq;
            }
          }
        } finally {
          await writer.close();
        }
        ctx.out(`archived ${old.length} sessions (${events} events) to ${opts.archive}`);
      }
      const by = opts.by ?? whoAmI();
      for (const id of old) {
        const r = await deleteOne(id, {
          by,
          reason: `retention: last changed before ${when}`,
          ...(opts.archive ? { archivedTo: opts.archive } : {}),
        });
        ctx.out(describeDeletion(r));
      }
      ctx.out(`deleted ${old.length} session${old.length === 1 ? '' : 's'} last changed before ${when}`);
    });
  });

  addLogOptions(
    program
      .command('deletions')
      .description('the audit of deleted sessions: who deleted which, when, why, how many events (never the content)')
      .option('--limit <n>', 'at most this many, newest first', positiveInt('--limit'), 100)
      .option('--json', 'one JSON object per line'),
    ctx,
  ).action(async (opts: LogOptions & { limit: number; json?: boolean }) => {
    await withTarget(opts, ctx, 'deletions', async ({ deletions, describe }) => {
      const records = await deletions(opts.limit);
      if (records.length === 0 && !opts.json) ctx.out(`no session was deleted from ${describe}`);
      for (const r of records) ctx.out(opts.json ? JSON.stringify(r) : describeDeletion(r));
    });
  });
}
