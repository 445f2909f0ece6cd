/**
 * `sessiond blobs sweep [--grace-ms N] [--dry-run]`: removes the blobs no event references (a
 * deleted session's left within the grace period, an admission that died between its blob and its
 * event) that were last put more than the grace period ago; what a worker does every ten minutes.
 */
import type { Command } from 'commander';
import { DEFAULT_BLOB_GRACE_MS, describeBlobSweep } from '../../blobs/sweep.ts';
import { UsageError } from '../../errors.ts';
import type { CliContext } from '../context.ts';
import { nonNegativeInt } from '../options.ts';
import { addLogOptions, openLog, type LogOptions } from '../log-options.ts';
import { blobStoreOf, sweepOpened } from '../blob-target.ts';

export function registerBlobs(program: Command, ctx: CliContext): void {
  const blobs = program.command('blobs').description('the blobs beside the log (images, files and tool results too large for an event)');
  addLogOptions(
    blobs
      .command('sweep')
      .description('remove the blobs no event references that were last stored more than the grace period ago (a worker does this every ten minutes)')
      .option(
        '--grace-ms <n>',
        'keep an unreferenced blob stored more recently than this (an admission may be about to reference it)',
        nonNegativeInt('--grace-ms'),
        DEFAULT_BLOB_GRACE_MS,
      )
      .option('--dry-run', 'only say what would be removed'),
    ctx,
  ).action(async (opts: LogOptions & { graceMs: number; dryRun?: boolean }) => {
    const opened = await openLog(opts, ctx);
    try {
      const store = await blobStoreOf(opened);
      if (!store) throw new UsageError(`${opened.describe} keeps no blobs: nothing to sweep.`);
      const report = await sweepOpened(opened, store, { graceMs: opts.graceMs, dryRun: opts.dryRun === true });
      const verb = opts.dryRun ? 'would remove' : 'removed';
      for (const b of report.orphaned)
        ctx.out(`${verb} blob ${b.sha256} (${b.mediaType}, ${b.size} bytes, stored at ${new Date(b.storedAt).toISOString()}): no event references it`);
      for (const e of report.errors) ctx.out(`could not remove blob ${e.sha256}: ${e.message}`);
      ctx.out(`${opened.describe}: ${describeBlobSweep(report, opts.dryRun === true)}`);
      if (report.errors.length > 0) process.exitCode = 1;
    } finally {
      await opened.close();
    }
  });
}
