import { isoTime } from '../../clock.ts';
import type { Command } from 'commander';
import { validateId } from '../../ids.ts';
import type { SessionEvent } from '../../events/envelope.ts';
import { preview } from '../../events/codec.ts';
import type { CliContext } from '../context.ts';
import { addLogOptions, openLog, type LogOptions } from '../log-options.ts';

/** `--type` matches an exact type, or a family with a trailing `*` (`tool.*`). */
export function typeMatcher(type: string | undefined): (t: string) => boolean {
  if (!type) return () => true;
  if (type.endsWith('*')) return (t) => t.startsWith(type.slice(0, -1));
  return (t) => t === type;
}

export function formatEvent(e: SessionEvent): string {
  const at = isoTime(e.time);
  const time = at.endsWith('Z') ? at.slice(11, 23) : at;
  return `${time} ${e.sessionId} #${e.seq} ${e.type} ${preview(e.payload, 160)}`;
}

export function registerTail(program: Command, ctx: CliContext): void {
  addLogOptions(
    program
      .command('tail')
      .description('follow committed events as they happen, one readable line each (Ctrl-C to stop)')
      .argument('[session]', 'only this session')
      .option('--type <type>', 'only this event type, or a family like "tool.*"')
      .option('--from-start', 'print the existing log first')
      .option('--json', 'one JSON object per line'),
    ctx,
  ).action(async (session: string | undefined, opts: LogOptions & { type?: string; fromStart?: boolean; json?: boolean }) => {
    if (session) validateId(session, 'session id');
    const matches = typeMatcher(opts.type);
    // listen for Ctrl-C before anything else, so an early one still stops cleanly
    const stop = new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
      process.once('SIGTERM', () => resolve());
      ctx.stdout.onClosed(() => resolve()); // `sessiond tail | grep -m1 ...`: the reader has what it wanted
    });
    const opened = await openLog(opts, ctx, { readonly: true });
    const after = opts.fromStart ? 0 : await opened.log.head();
    let shown = 0;
    const sub = opened.log.subscribe({
      after,
      onBatch: (events) => {
        for (const e of events) {
          if ((session && e.sessionId !== session) || !matches(e.type)) continue;
          shown++;
          ctx.out(opts.json ? JSON.stringify(e) : formatEvent(e));
        }
      },
      onError: (err) => ctx.err(`sessiond: tail stopped: ${String(err)}`),
    });
    ctx.err(`following ${opened.describe}${session ? ` for ${session}` : ''}${opts.type ? ` (type ${opts.type})` : ''}; Ctrl-C to stop`);
    await stop;
    await sub.close();
    await opened.close();
    if (!ctx.stdout.closed) ctx.err(`stopped after ${shown} events`);
  });
}
