/**
 * `sessiond prompt SESSION TEXT [--at TIME | --in DURATION]`: admits a prompt (scheduled: no turn
 * takes it before the time; a worker's recovery sweep wakes the session when it is due). Embedded (default): into the SQLite log, and a
 * running worker picks it up. With `--nats <url>`: sent as an `admit` command on
 * `sessiond.cmd.admit`, answered by one running worker. Either way through `Sessions`.
 */
import type { Command } from 'commander';
import type { AdmitRequest } from '../../input/admit.ts';
import { validateId } from '../../ids.ts';
import type { CliContext } from '../context.ts';
import { duration, instant, oneOf } from '../options.ts';
import { UsageError } from '../../errors.ts';
import { addLogOptions, type LogOptions } from '../log-options.ts';
import { withSessions } from '../open-sessions.ts';
import { collectTag } from './sessions-list.ts';

interface PromptOptions extends LogOptions {
  delivery: 'steer' | 'queue';
  id?: string;
  wake: boolean;
  at?: number;
  in?: number;
  tag?: [string, string][];
}

export function registerPrompt(program: Command, ctx: CliContext): void {
  addLogOptions(
    program
      .command('prompt')
      .description('admit a prompt into a session; a running worker picks it up')
      .argument('<session>', 'session id')
      .argument('<text>', 'the prompt')
      .option('--delivery <steer|queue>', 'steer joins the running turn; queue waits for the next', oneOf('--delivery', ['steer', 'queue'] as const), 'queue')
      .option('--id <inputId>', 'input id (idempotency key); generated when absent')
      .option('--no-wake', 'admit without waking the session')
      .option('--at <time>', 'schedule it: no turn runs it before this time (ISO 8601 with a zone, e.g. 2026-12-24T09:00:00Z)', instant('--at'))
      .option('--in <duration>', 'schedule it this long from now (e.g. 90s, 10m, 1h30m, 2d)', duration('--in'))
      .option('--tag <key=value>', 'tag the session (repeatable; merged into the tags it has)', collectTag),
    ctx,
  ).action(async (session: string, text: string, opts: PromptOptions) => {
    validateId(session, 'session id');
    if (opts.at !== undefined && opts.in !== undefined) throw new UsageError('--at and --in both say when: give one of them.');
    const notBefore = opts.at ?? (opts.in === undefined ? undefined : Date.now() + opts.in);
    const request: AdmitRequest = {
      prompt: text,
      delivery: opts.delivery,
      wake: opts.wake,
      ...(opts.id ? { id: opts.id } : {}),
      ...(notBefore === undefined ? {} : { notBefore }),
      ...(opts.tag?.length ? { tags: Object.fromEntries(opts.tag) } : {}),
    };
    await withSessions(opts, ctx, 'sessiond-prompt', async ({ sessions, remote }) => {
      const receipt = await sessions.admit(session, request);
      ctx.out(`${receipt.created ? 'admitted' : 'already admitted'} ${receipt.inputId} to ${session} at sequence ${receipt.admittedSeq} (${opts.delivery})`);
      if (notBefore !== undefined)
        ctx.out(`scheduled: no turn runs it before ${new Date(notBefore).toISOString()}; a running worker's sweep wakes the session then`);
      else if (!receipt.wake) ctx.out('not woken (--no-wake): it waits until the session is woken');
      else ctx.out(remote ? 'a worker took the command and woke the session' : 'a running worker (sessiond start) will pick it up');
    });
  });
}
