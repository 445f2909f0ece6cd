/**
 * `sessiond cancel SESSION [--pending [--input ID...]]`: cancels the execution in progress, or with
 * `--pending` drops the session's pending inputs unrun instead (an operator unblocking a session;
 * a continuation of an interrupted turn is kept). Embedded: decided and appended on the SQLite log
 * here. With `--nats`: sent as a `cancel` (or `drop`) command to the workers, which the client user
 * may send; the client user may not write the log itself. Either way through `Sessions`.
 */
import type { Command } from 'commander';
import { validateId } from '../../ids.ts';
import type { CliContext } from '../context.ts';
import { BY_OPTION, whoAmI } from '../who.ts';
import { addLogOptions, type LogOptions } from '../log-options.ts';
import { UsageError } from '../../errors.ts';
import { withSessions } from '../open-sessions.ts';

type CancelOptions = LogOptions & { reason?: string; pending?: boolean; input?: string[]; by?: string };

export function registerCancel(program: Command, ctx: CliContext): void {
  addLogOptions(
    program
      .command('cancel')
      .description('cancel the execution in progress; cancellation is final (a late result changes nothing)')
      .argument('<session>', 'session id')
      .option('--reason <text>', 'why, recorded with the cancellation')
      .option('--pending', 'drop the pending inputs unrun instead (the turn in progress, if any, goes on)')
      .option('--input <id...>', 'with --pending: drop only these inputs')
      .option(BY_OPTION[0], BY_OPTION[1]),
    ctx,
  ).action(async (session: string, opts: CancelOptions) => {
    validateId(session, 'session id');
    if (opts.input && !opts.pending) throw new UsageError('--input names inputs to drop: use it with --pending.');
    await withSessions(opts, ctx, 'sessiond-cancel', async ({ sessions }) => {
      if (opts.pending) {
        const dropped = await sessions.dropPending(session, {
          ...(opts.input ? { inputIds: opts.input } : {}),
          ...(opts.reason ? { reason: opts.reason } : {}),
          actor: opts.by ?? whoAmI(),
        });
        if (dropped.dropped.length > 0) {
          ctx.out(
            `dropped ${dropped.dropped.length} pending input${dropped.dropped.length === 1 ? '' : 's'} of ${session}${dropped.seq !== undefined ? ` at sequence ${dropped.seq}` : ''}: ${dropped.dropped.slice(0, 10).join(', ')}${dropped.dropped.length > 10 ? ', ...' : ''}`,
          );
          return;
        }
        ctx.out(`${session}: no pending input to drop${opts.input ? ` among ${opts.input.join(', ')}` : ''}`);
        process.exitCode = 1;
        return;
      }
      const result = await sessions.cancel(session, opts.reason, undefined, { actor: opts.by ?? whoAmI() });
      if (result.cancelled) {
        ctx.out(`cancelled execution ${result.executionId} of ${session}`);
        return;
      }
      ctx.out(`${session}: nothing to cancel (${result.message})`);
      process.exitCode = 1;
    });
  });
}
