/**
 * `sessiond fork SOURCE NEW [--at SEQ] [--tag k=v]...`: starts NEW as a fork of SOURCE, holding its
 * conversation up to a settled point (default: the last), through `Sessions.fork` (the SQLite log
 * at rest, or a worker over NATS).
 */
import type { Command } from 'commander';
import { validateId } from '../../ids.ts';
import type { CliContext } from '../context.ts';
import { positiveInt } from '../options.ts';
import { addLogOptions, type LogOptions } from '../log-options.ts';
import { withSessions } from '../open-sessions.ts';
import { collectTag } from './sessions-list.ts';

export function registerFork(program: Command, ctx: CliContext): void {
  addLogOptions(
    program
      .command('fork')
      .description("start a new session from another's conversation up to a settled point, to try another answer")
      .argument('<source>', 'the session to fork')
      .argument('<new>', 'the new session id')
      .option('--at <seq>', "the source's sequence to fork at: a point between turns (default: the last one)", positiveInt('--at'))
      .option('--tag <key=value>', "tag the new session (repeatable; the source's tags are not copied)", collectTag),
    ctx,
  ).action(async (source: string, fresh: string, opts: LogOptions & { at?: number; tag?: [string, string][] }) => {
    validateId(source, 'source session id');
    validateId(fresh, 'session id');
    await withSessions(opts, ctx, 'sessiond-fork', async ({ sessions }) => {
      const r = await sessions.fork(source, fresh, {
        ...(opts.at === undefined ? {} : { at: opts.at }),
        ...(opts.tag?.length ? { tags: Object.fromEntries(opts.tag) } : {}),
      });
      ctx.out(
        r.created
          ? `forked ${source} at sequence ${r.from.seq} into ${fresh}: it starts with ${r.items} conversation item${r.items === 1 ? '' : 's'}`
          : `${fresh} is already a fork of ${source} at sequence ${r.from.seq}; nothing changed`,
      );
      ctx.out(`continue it: sessiond prompt ${fresh} "..."`);
    });
  });
}
