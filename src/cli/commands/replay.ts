import type { Command } from 'commander';
import { DEFAULT_MAX_BLOB_BYTES } from '../../blobs/blob-store.ts';
import { SqliteBlobStore } from '../../storage/sqlite/sqlite-blob-store.ts';
import { existsSync } from 'node:fs';
import { replayExport, type ReplayProgress } from '../../export/replay-export.ts';
import { openDatabase } from '../../storage/sqlite/database.ts';
import { migrate } from '../../storage/sqlite/migrate.ts';
import { validateId } from '../../ids.ts';
import { isoTime, systemClock } from '../../clock.ts';
import type { Withheld } from '../../export/evidence.ts';
import { printable } from '../printable.ts';
import { ALLOW_URL_HOST_OPTION, collectHost } from './start.ts';
import { NotFoundError, messageOf, CorruptExportError } from '../../errors.ts';
import type { CliContext } from '../context.ts';
import { positiveInt } from '../options.ts';
import { progress } from '../progress.ts';

export function registerReplay(program: Command, ctx: CliContext): void {
  program
    .command('replay')
    .description('rebuild a fresh database from an export file: the log and its projection, in one pass')
    .argument('<file>', 'export file (sessiond export)')
    .requiredOption('--db <out>', 'database to create (must not hold a log yet)')
    .option('--until-seq <n>', "keep each session's events up to this sequence", positiveInt('--until-seq'))
    .option('--session <id>', 'only this session')
    .option(ALLOW_URL_HOST_OPTION[0], `${ALLOW_URL_HOST_OPTION[1]}: a prompt naming another is replayed no further (as admission)`, collectHost)
    .action(async (file: string, opts: { db: string; untilSeq?: number; session?: string; allowUrlHost?: string[] }) => {
      if (opts.session) validateId(opts.session, 'session id');
      if (!existsSync(file)) throw new NotFoundError(`No such export file: ${file}. Create one with: sessiond export --out ${file}`);
      const db = openDatabase(opts.db);
      try {
        migrate(db);
        const started = systemClock.now();
        let bar: ReturnType<typeof progress> | undefined;
        let done: Pick<ReplayProgress, 'imported'> = { imported: 0 };
        let damage: CorruptExportError | undefined;
        let withheld: Withheld[] = [];
        let blobs = { restored: 0, missing: [] as string[] };
        const store = new SqliteBlobStore(db, systemClock);
        try {
          const result = await replayExport(db, file, {
            // each blob checked against its hash as it is stored (a mismatch stops the replay)
            putBlob: async (ref, bytes) =>
              void (await store.put(bytes, { mediaType: ref.mediaType, expectedSha256: ref.sha256, maxBytes: Math.max(ref.size, DEFAULT_MAX_BLOB_BYTES) })),
            urls: { allow: opts.allowUrlHost ?? [] },
            keep: (e) => (!opts.session || e.sessionId === opts.session) && (opts.untilSeq === undefined || e.seq <= opts.untilSeq),
            onHeader: (h) => {
              bar = progress(ctx, 'replay', 'bytes', 0);
              ctx.err(`replaying ${printable(file)} (written ${isoTime(h.created)} from ${printable(h.source)})`);
            },
            onProgress: (p) => {
              done = p;
              bar?.update(p.bytes, p.totalBytes);
            },
          });
          withheld = result.withheld;
          blobs = { restored: result.blobs, missing: result.missingBlobs };
        } catch (err) {
          if (!(err instanceof CorruptExportError)) throw err;
          damage = err;
        }
        const secs = Math.max(0.001, (systemClock.now() - started) / 1000);
        const restored =
          blobs.restored > 0 ? `, restored the ${blobs.restored} blob${blobs.restored === 1 ? '' : 's'} they reference (each checked against its hash)` : '';
        const summary = `replayed ${done.imported} events into ${opts.db}${restored} and rebuilt its projection with them in ${secs.toFixed(1)} s (${Math.round(done.imported / secs)} events/s)`;
        if (bar) bar.stop(summary);
        else ctx.out(summary);
        for (const w of withheld)
          ctx.err(
            `sessiond: session ${printable(w.sessionId)} replayed only up to seq ${w.seq - 1}: ${w.rule}: ${printable(w.message, 400)}. ${w.rule === 'prompt_url_refused' ? 'Replay with --allow-url-host if that host is meant to be fetched' : 'An export is evidence, not authority: decide again where it runs'} (docs/operating.md).`,
          );
        if (withheld.length > 0) process.exitCode = 1;
        for (const sha of blobs.missing)
          ctx.err(
            `sessiond: blob ${sha} is referenced by the replayed events but the file does not carry it: store its bytes in ${opts.db} (sessiond check reports it missing until then).`,
          );
        if (damage) {
          ctx.err(`sessiond: ${messageOf(damage)} Everything before it was replayed.`);
          process.exitCode = 1;
        }
      } finally {
        db.close();
      }
    });
}
