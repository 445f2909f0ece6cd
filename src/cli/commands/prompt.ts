/**
 * `sessiond prompt SESSION [TEXT] [--image|--file PATH|URL]... [--json DATA]... [--at TIME | --in
 * DURATION]`: admits a prompt (of parts, the text first), scheduled with `--at`/`--in` (the recovery
 * sweep wakes the session when due). Embedded: into the SQLite log; with `--nats`, an `admit`
 * command one worker answers. Either way through `Sessions`.
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
import { promptFromOptions, readPrompt } from './prompt-parts.ts';
import { ALLOW_URL_HOST_OPTION, collectHost } from './start.ts';

interface PromptOptions extends LogOptions {
  delivery: 'steer' | 'queue';
  id?: string;
  wake: boolean;
  at?: number;
  in?: number;
  tag?: [string, string][];
  image?: string[];
  file?: string[];
  json?: string[];
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

export function registerPrompt(program: Command, ctx: CliContext): void {
  addLogOptions(
    program
      .command('prompt')
      .description('admit a prompt into a session; a running worker picks it up')
      .argument('<session>', 'session id')
      .argument('[text]', 'the prompt (with --image, --file or --json it is the first part, and may be left out)')
      .option('--image <path|url>', 'add an image: a .png, .jpg, .gif or .webp file (sent as its bytes) or an https URL to a public host (repeatable)', collect)
      .option(
        '--file <path|url>',
        'add a file: a .pdf, .txt, .md, .csv, .json, .html or .xml file (its bytes) or an https URL to a public host (repeatable)',
        collect,
      )
      .option(ALLOW_URL_HOST_OPTION[0], `${ALLOW_URL_HOST_OPTION[1]} (embedded; with --nats the worker's own flag decides)`, collectHost)
      .option('--json <data>', 'add JSON data: the JSON text, or @FILE to read it from a file (repeatable)', collect)
      .option('--delivery <steer|queue>', 'steer joins the running turn; queue waits for the next', oneOf('--delivery', ['steer', 'queue'] as const), 'queue')
      .option('--id <inputId>', 'input id (idempotency key); generated when absent')
      .option('--no-wake', 'admit without waking the session')
      .option('--at <time>', 'schedule it: no turn runs it before this time (ISO 8601 with a zone, e.g. 2026-12-24T09:00:00Z)', instant('--at'))
      .option('--in <duration>', 'schedule it this long from now (e.g. 90s, 10m, 1h30m, 2d)', duration('--in'))
      .option('--tag <key=value>', 'tag the session (repeatable; merged into the tags it has)', collectTag),
    ctx,
  ).action(async (session: string, text: string | undefined, opts: PromptOptions) => {
    validateId(session, 'session id');
    const draft = promptFromOptions(text, opts);
    if (opts.at !== undefined && opts.in !== undefined) throw new UsageError('--at and --in both say when: give one of them.');
    const notBefore = opts.at ?? (opts.in === undefined ? undefined : Date.now() + opts.in);
    const request: Omit<AdmitRequest, 'prompt'> = {
      delivery: opts.delivery,
      wake: opts.wake,
      ...(opts.id ? { id: opts.id } : {}),
      ...(notBefore === undefined ? {} : { notBefore }),
      ...(opts.tag?.length ? { tags: Object.fromEntries(opts.tag) } : {}),
      // the caller's trace context, as other CLIs read it: the turn that runs the prompt is its child
      ...(ctx.env.TRACEPARENT ? { traceparent: ctx.env.TRACEPARENT } : {}),
    };
    await withSessions(opts, ctx, 'sessiond-prompt', async ({ sessions, remote, uploadBlob }) => {
      // a large local file is streamed to the blob store first and sent as its reference
      const prompt = await readPrompt(draft, uploadBlob && ((source, mediaType, size) => uploadBlob(source, { mediaType, size })));
      const receipt = await sessions.admit(session, { ...request, prompt });
      ctx.out(
        `${receipt.created ? 'admitted' : 'already admitted'} ${receipt.inputId} to ${session} at sequence ${receipt.admittedSeq} (${opts.delivery}${typeof prompt === 'string' ? '' : `, ${prompt.length} parts`})`,
      );
      if (notBefore !== undefined)
        ctx.out(`scheduled: no turn runs it before ${new Date(notBefore).toISOString()}; a running worker's sweep wakes the session then`);
      else if (!receipt.wake) ctx.out('not woken (--no-wake): it waits until the session is woken');
      else ctx.out(remote ? 'a worker took the command and woke the session' : 'a running worker (sessiond start) will pick it up');
    });
  });
}
