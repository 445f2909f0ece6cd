import type { Command } from 'commander';
import { blobRefsOf, type BlobRef } from '../../events/blob-refs.ts';
import type { SessionEvent } from '../../events/envelope.ts';
import { exportBlobSource } from '../export-blobs.ts';
import { ExportWriter } from '../../export/export-file.ts';
import { validateId } from '../../ids.ts';
import { systemClock } from '../../clock.ts';
import type { CliContext } from '../context.ts';
import { addLogOptions, openLog, type LogOptions } from '../log-options.ts';
import { progress } from '../progress.ts';
import { SeqContinuity } from '../../export/continuity.ts';
import { describeQuarantine, type QuarantinedMessage } from '../../events/quarantine.ts';

const PAGE = 5000;

export function registerExport(program: Command, ctx: CliContext): void {
  addLogOptions(
    program
      .command('export')
      .description('export a log (embedded or NATS) to a portable file of msgpack frames')
      .requiredOption('--out <file>', 'file to write')
      .option('--session <id>', 'only this session'),
    ctx,
  ).action(async (opts: LogOptions & { out: string; session?: string }) => {
    if (opts.session) validateId(opts.session, 'session id');
    const skipped: QuarantinedMessage[] = [];
    const opened = await openLog(opts, ctx, { readonly: true, onQuarantine: (q) => skipped.push(q) });
    const continuity = new SeqContinuity();
    // each blob with the first session that references it (the workers' blob command reads it as that session)
    const refs = new Map<string, { ref: BlobRef; sessionId: string }>();
    const collectRefs = (page: readonly SessionEvent[]) => {
      for (const e of page) for (const ref of blobRefsOf(e)) if (!refs.has(ref.sha256)) refs.set(ref.sha256, { ref, sessionId: e.sessionId });
    };
    try {
      const started = systemClock.now();
      const total = opts.session ? await opened.log.lastSeq(opts.session) : await opened.log.head();
      const writer = await ExportWriter.create(opts.out, { created: started, source: opened.describe, events: opts.session ? total : -1 });
      const bar = progress(ctx, 'export', opts.session ? 'events' : 'positions', total);
      if (opts.session) {
        for (let after = 0; ; ) {
          const page = await opened.log.readSession(opts.session, { afterSeq: after, limit: PAGE });
          if (page.length === 0) break;
          continuity.observe(page);
          await writer.write(page);
          collectRefs(page);
          after = page[page.length - 1]!.seq;
          bar.update(after);
        }
      } else {
        // one read of the whole log (on NATS one ordered consumer, not one per page)
        for await (const page of opened.log.readPages({ pageSize: PAGE })) {
          continuity.observe(page);
          await writer.write(page);
          collectRefs(page);
          bar.update(page[page.length - 1]!.position!);
        }
      }
      // the blobs the events reference, after them (the file is then version 2); no reference, no store opened
      // from the store beside the log, else (the client user on NATS) through the workers
      const source = refs.size === 0 ? undefined : await exportBlobSource(opened);
      const lacking: string[] = [];
      let unread = 0;
      if (source && 'open' in source) {
        try {
          for (const { ref, sessionId } of refs.values()) {
            const chunks = await source.open(ref.sha256, sessionId);
            if (chunks === 'missing') lacking.push(ref.sha256);
            else if (chunks === 'unread') unread++;
            else await writer.writeBlob(ref, chunks);
          }
        } finally {
          await source.close();
        }
      } else if (source) {
        unread = refs.size;
      }
      await writer.close();
      const secs = Math.max(0.001, (systemClock.now() - started) / 1000);
      bar.stop(
        `exported ${writer.written} events${opts.session ? ` of ${opts.session}` : ''}${writer.blobsWritten > 0 ? ` and the ${writer.blobsWritten} blob${writer.blobsWritten === 1 ? '' : 's'} they reference${source && 'via' in source && source.via !== 'the blob store' ? `, read through ${source.via}` : ''}` : ''} from ${opened.describe} to ${opts.out} in ${secs.toFixed(1)} s (${Math.round(writer.written / secs)} events/s)`,
      );
      // what the file lacks, said plainly: it is still a faithful copy of what the log holds
      for (const p of continuity.problems()) ctx.err(`warning: ${p.message}`);
      for (const q of skipped) ctx.err(`warning: skipped ${describeQuarantine(q)}`);
      if (unread > 0 && source)
        ctx.err(
          `warning: ${unread} of the ${refs.size} blob${refs.size === 1 ? '' : 's'} the events reference could not be read (${source.problem}): the file holds ${unread === 1 ? 'its reference' : 'their references'} only. Export as a user that may read the blob bucket, or with a worker serving commands.`,
        );
      for (const sha of lacking)
        ctx.err(`warning: blob ${sha} is referenced but not in the store: the file holds its reference only (sessiond check reports it missing)`);
      if (opts.session && writer.written !== total) {
        ctx.err(
          `warning: the header says ${total} events (session ${opts.session}'s last seq) but the file holds ${writer.written}: the log ${continuity.last(opts.session) < total ? 'ends early' : 'is missing events'}.`,
        );
      }
    } finally {
      await opened.close();
    }
  });
}
