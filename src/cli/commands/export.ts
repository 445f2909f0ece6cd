import type { Command } from 'commander';
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
          after = page[page.length - 1]!.seq;
          bar.update(after);
        }
      } else {
        // one read of the whole log (on NATS one ordered consumer, not one per page)
        for await (const page of opened.log.readPages({ pageSize: PAGE })) {
          continuity.observe(page);
          await writer.write(page);
          bar.update(page[page.length - 1]!.position!);
        }
      }
      await writer.close();
      const secs = Math.max(0.001, (systemClock.now() - started) / 1000);
      bar.stop(
        `exported ${writer.written} events${opts.session ? ` of ${opts.session}` : ''} from ${opened.describe} to ${opts.out} in ${secs.toFixed(1)} s (${Math.round(writer.written / secs)} events/s)`,
      );
      // what the file lacks, said plainly: it is still a faithful copy of what the log holds
      for (const p of continuity.problems()) ctx.err(`warning: ${p.message}`);
      for (const q of skipped) ctx.err(`warning: skipped ${describeQuarantine(q)}`);
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
