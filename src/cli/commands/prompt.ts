/**
 * `sessiond prompt SESSION TEXT`: admits a prompt. Embedded (default): into the SQLite log, and a
 * running worker picks it up. With `--nats <url>`: sent as an `admit` command on
 * `sessiond.cmd.admit`, answered by one running worker. Either way through `Sessions`.
 */
import type { Command } from 'commander';
import type { AdmitRequest } from '../../input/admit.ts';
import { validateId } from '../../ids.ts';
import type { CliContext } from '../context.ts';
import { oneOf } from '../options.ts';
import { addLogOptions, type LogOptions } from '../log-options.ts';
import { withSessions } from '../open-sessions.ts';

interface PromptOptions extends LogOptions {
  delivery: 'steer' | 'queue';
  id?: string;
  wake: boolean;
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
      .option('--no-wake', 'admit without waking the session'),
    ctx,
  ).action(async (session: string, text: string, opts: PromptOptions) => {
    validateId(session, 'session id');
    const request: AdmitRequest = { prompt: text, delivery: opts.delivery, wake: opts.wake, ...(opts.id ? { id: opts.id } : {}) };
    await withSessions(opts, ctx, 'sessiond-prompt', async ({ sessions, remote }) => {
      const receipt = await sessions.admit(session, request);
      ctx.out(`${receipt.created ? 'admitted' : 'already admitted'} ${receipt.inputId} to ${session} at sequence ${receipt.admittedSeq} (${opts.delivery})`);
      if (!receipt.wake) ctx.out('not woken (--no-wake): it waits until the session is woken');
      else ctx.out(remote ? 'a worker took the command and woke the session' : 'a running worker (sessiond start) will pick it up');
    });
  });
}
