import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { readExport, CorruptExportError } from '../../export/export-file.ts';
import { eventImporter } from '../../storage/import-events.ts';
import { openDatabase } from '../../storage/sqlite.ts';
import { migrate } from '../../storage/migrate.ts';
import { SqliteEventLog } from '../../storage/sqlite-event-log.ts';
import { rebuildProjection } from '../../projector/rebuild.ts';
import { validateId } from '../../ids.ts';
import { systemClock } from '../../clock.ts';
import { ErrorCode, SessiondError, messageOf } from '../../errors.ts';
import type { CliContext } from '../context.ts';
import { positiveInt } from '../options.ts';
import { progress } from '../progress.ts';

export function registerReplay(program: Command, ctx: CliContext): void {
  program
    .command('replay')
    .description('rebuild a fresh database from an export file: the log, then the projection')
    .argument('<file>', 'export file (sessiond export)')
    .requiredOption('--db <out>', 'database to create (must not hold a log yet)')
    .option('--until-seq <n>', 'keep each session\'s events up to this sequence', positiveInt('--until-seq'))
    .option('--session <id>', 'only this session')
    .action(async (file: string, opts: { db: string; untilSeq?: number; session?: string }) => {
      if (opts.session) validateId(opts.session, 'session id');
      if (!existsSync(file)) throw new SessiondError(ErrorCode.InvalidOption, `No such export file: ${file}. Create one with: sessiond export --out ${file}`);
      const db = openDatabase(opts.db);
      migrate(db);
      const log = new SqliteEventLog(db);
      try {
        if ((await log.head()) > 0) {
          throw new SessiondError(ErrorCode.InvalidOption, `${opts.db} already holds an event log: replay into a fresh database file.`);
        }
        const started = systemClock.now();
        const importer = eventImporter(db);
        let imported = 0;
        let bar: ReturnType<typeof progress> | undefined;
        let damage: CorruptExportError | undefined;
        try {
          await readExport(file, {
            onHeader: (h) => { bar = progress(ctx, 'replay', 'bytes', 0); ctx.err(`replaying ${file} (written ${new Date(h.created).toISOString()} from ${h.source})`); },
            onEvents: (events) => {
              const keep = events.filter((e) => (!opts.session || e.sessionId === opts.session) && (opts.untilSeq === undefined || e.seq <= opts.untilSeq));
              if (keep.length) importer(keep);
              imported += keep.length;
            },
            onProgress: (bytes, total) => bar?.update(bytes, total),
          });
        } catch (err) {
          if (!(err instanceof CorruptExportError)) throw err;
          damage = err;
        }
        bar?.stop();
        const rebuilt = progress(ctx, 'projection', 'positions', await log.head());
        const result = await rebuildProjection(db, log, { onProgress: (done, total) => rebuilt.update(done, total) });
        const secs = Math.max(0.001, (systemClock.now() - started) / 1000);
        rebuilt.stop(`replayed ${imported} events into ${opts.db} and rebuilt its projection (${result.events} events) in ${secs.toFixed(1)} s (${Math.round(imported / secs)} events/s)`);
        if (damage) {
          ctx.err(`sessiond: ${messageOf(damage)} Everything before it was replayed.`);
          process.exitCode = 1;
        }
      } finally {
        await log.close();
        db.close();
      }
    });
}
