import type { Command } from 'commander';
import type { CliContext } from '../context.ts';
import { addLogOptions, type LogOptions } from '../log-options.ts';
import { progress, type Progress } from '../progress.ts';
import { openVerifySource } from '../verify-source.ts';
import { verifyLog } from '../../verify/verify-log.ts';
import { reportLines } from '../../verify/report-text.ts';

/** Logs smaller than this (events) are verified without progress lines. */
const PROGRESS_FROM = 5_000;

export function registerVerify(program: Command, ctx: CliContext): void {
  addLogOptions(
    program
      .command('verify')
      .description(
        'before an upgrade: fold every stored session with this version (machine, catalog and upcasters, projector) and report each one it cannot decode, refuses, or reads differently from what is stored, with the first sequence; exits 1 when any',
      )
      .argument('[file]', 'an export file (sessiond export) or a database file, instead of --db or --nats')
      .option('--json', 'print the report as one JSON object'),
    ctx,
  ).action(async (file: string | undefined, opts: LogOptions & { json?: boolean }) => {
    const source = await openVerifySource(file, opts, ctx);
    try {
      const bars: Partial<Record<'reading' | 'folding', Progress>> = {};
      const report = await verifyLog(source, {
        onProgress: ({ phase, done, total }) => {
          if (total < PROGRESS_FROM) return; // a small log is done before a bar would say anything
          if (phase === 'folding' && bars.reading) {
            bars.reading.stop();
            delete bars.reading;
          }
          (bars[phase] ??= progress(ctx, phase === 'reading' ? 'verify: reading the log' : 'verify: folding sessions', 'events', total)).update(done, total);
        },
      });
      bars.reading?.stop();
      bars.folding?.stop();
      if (opts.json) ctx.out(JSON.stringify(report));
      else for (const line of reportLines(report)) ctx.out(line);
      if (!report.ok) process.exitCode = 1;
    } finally {
      await source.close();
    }
  });
}
