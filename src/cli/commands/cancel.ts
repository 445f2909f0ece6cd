/**
 * `sessiond cancel SESSION [--pending [--input ID...]]`: cancels the execution in progress, or with
 * `--pending` drops the session's pending inputs unrun instead (an operator unblocking a session;
 * a continuation of an interrupted turn is kept). Embedded: decided and appended on the
 * SQLite log here. With `--nats`: sent as a `cancel` command to the workers (sessiond.cmd.cancel),
 * which the client user may send; the client user may not write the log itself.
 */
import type { Command } from 'commander';
import { CommandHandler } from '../../execution/command-handler.ts';
import { isRefusal, UsageError } from '../../errors.ts';
import { systemClock } from '../../clock.ts';
import { randomIds, validateId } from '../../ids.ts';
import { SessiondClient } from '../../nats/client.ts';
import type { CliContext } from '../context.ts';
import { addLogOptions, openLog, type LogOptions } from '../log-options.ts';
import { natsConnectionOptions } from '../nats-options.ts';
import { dropPending, type DropPendingRequest, type DropPendingResult } from '../../input/drop.ts';

type CancelOptions = LogOptions & { reason?: string; pending?: boolean; input?: string[] };

export function registerCancel(program: Command, ctx: CliContext): void {
  addLogOptions(program
    .command('cancel')
    .description('cancel the execution in progress; cancellation is final (a late result changes nothing)')
    .argument('<session>', 'session id')
    .option('--reason <text>', 'why, recorded with the cancellation')
    .option('--pending', 'drop the pending inputs unrun instead (the turn in progress, if any, goes on)')
    .option('--input <id...>', 'with --pending: drop only these inputs'), ctx)
    .action(async (session: string, opts: CancelOptions) => {
      validateId(session, 'session id');
      if (opts.input && !opts.pending) throw new UsageError('--input names inputs to drop: use it with --pending.');
      const nats = natsConnectionOptions(opts, ctx, 'sessiond-cancel');
      if (opts.pending) {
        const dropped = nats ? await dropOverNats(nats, session, opts) : await dropEmbedded(opts, ctx, session);
        if (dropped.dropped.length > 0) {
          ctx.out(`dropped ${dropped.dropped.length} pending input${dropped.dropped.length === 1 ? '' : 's'} of ${session}${dropped.seq !== undefined ? ` at sequence ${dropped.seq}` : ''}: ${dropped.dropped.slice(0, 10).join(', ')}${dropped.dropped.length > 10 ? ', ...' : ''}`);
          return;
        }
        ctx.out(`${session}: no pending input to drop${opts.input ? ` among ${opts.input.join(', ')}` : ''}`);
        process.exitCode = 1;
        return;
      }
      const result = nats ? await cancelOverNats(nats, session, opts.reason) : await cancelEmbedded(opts, ctx, session);
      if (result.cancelled) {
        ctx.out(`cancelled execution ${result.executionId} of ${session}${result.seq !== undefined ? ` at sequence ${result.seq}` : ''}`);
        return;
      }
      ctx.out(`${session}: nothing to cancel (${result.message ?? 'no execution in progress'})`);
      process.exitCode = 1;
    });
}

const dropRequest = (opts: CancelOptions): DropPendingRequest => ({ ...(opts.input ? { inputIds: opts.input } : {}), ...(opts.reason ? { reason: opts.reason } : {}) });

async function dropEmbedded(opts: CancelOptions, ctx: CliContext, session: string): Promise<DropPendingResult> {
  const opened = await openLog(opts, ctx);
  try {
    return await dropPending(new CommandHandler(opened.log, systemClock, randomIds), session, dropRequest(opts));
  } finally {
    await opened.close();
  }
}

async function dropOverNats(connection: NonNullable<ReturnType<typeof natsConnectionOptions>>, session: string, opts: CancelOptions): Promise<DropPendingResult> {
  const client = await SessiondClient.connect({ connection });
  try {
    return await client.dropPending(session, dropRequest(opts));
  } finally {
    await client.close();
  }
}

type Outcome = { cancelled: true; executionId: string; seq?: number } | { cancelled: false; message?: string };

async function cancelEmbedded(opts: CancelOptions, ctx: CliContext, session: string): Promise<Outcome> {
  const opened = await openLog(opts, ctx);
  try {
    const handler = new CommandHandler(opened.log, systemClock, randomIds);
    const { events } = await handler.execute(session, (now) => ({ type: 'cancel', now, ...(opts.reason ? { reason: opts.reason } : {}) }), { fresh: true });
    return { cancelled: true, executionId: (events[0]!.payload as { executionId: string }).executionId, seq: events[0]!.seq };
  } catch (err) {
    if (!isRefusal(err, 'nothing_to_cancel')) throw err;
    return { cancelled: false };
  } finally {
    await opened.close();
  }
}

async function cancelOverNats(connection: NonNullable<ReturnType<typeof natsConnectionOptions>>, session: string, reason?: string): Promise<Outcome> {
  const client = await SessiondClient.connect({ connection });
  try {
    const result = await client.cancel(session, reason);
    return result.cancelled ? { cancelled: true, executionId: result.executionId } : { cancelled: false, message: result.message };
  } finally {
    await client.close();
  }
}
