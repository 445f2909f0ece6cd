import type { Command } from 'commander';
import { CommandHandler } from '../../execution/command-handler.ts';
import { isRefusal } from '../../execution/errors.ts';
import { systemClock } from '../../clock.ts';
import { randomIds, validateId } from '../../ids.ts';
import type { CliContext } from '../context.ts';
import { addLogOptions, openLog, type LogOptions } from '../log-options.ts';

export function registerCancel(program: Command, ctx: CliContext): void {
  addLogOptions(program
    .command('cancel')
    .description('cancel the execution in progress; cancellation is final (a late result changes nothing)')
    .argument('<session>', 'session id')
    .option('--reason <text>', 'why, recorded with the cancellation'), ctx)
    .action(async (session: string, opts: LogOptions & { reason?: string }) => {
      validateId(session, 'session id');
      const opened = await openLog(opts, ctx);
      try {
        const handler = new CommandHandler(opened.log, systemClock, randomIds);
        const { events } = await handler.execute(session, (now) => ({ type: 'cancel', now, ...(opts.reason ? { reason: opts.reason } : {}) }), { fresh: true });
        ctx.out(`cancelled execution ${(events[0]!.payload as { executionId: string }).executionId} of ${session} at sequence ${events[0]!.seq}`);
      } catch (err) {
        if (!isRefusal(err, 'nothing_to_cancel')) throw err;
        ctx.out(`${session}: nothing to cancel (no execution in progress)`);
        process.exitCode = 1;
      } finally {
        await opened.close();
      }
    });
}
