/**
 * `sessiond approve SESSION CALL`, `sessiond deny SESSION CALL` (`--reason TEXT`) and `sessiond
 * resolve SESSION NAME [--data JSON]` (the value `ctx.waitFor(NAME)` waits for): what ends a turn's
 * waits. Embedded: on the SQLite log here; with `--nats`, a `resolve` command to the workers.
 */
import type { Command } from 'commander';
import { validateId } from '../../ids.ts';
import type { ResolveResult } from '../../input/resolve.ts';
import { UsageError } from '../../errors.ts';
import type { CliContext } from '../context.ts';
import { BY_OPTION, whoAmI } from '../who.ts';
import { addLogOptions, type LogOptions } from '../log-options.ts';
import { withSessions } from '../open-sessions.ts';

type DecideOptions = LogOptions & { reason?: string; by?: string };
type ResolveOptions = LogOptions & { data?: string; by?: string };

function report(ctx: CliContext, r: ResolveResult, what: string): void {
  if (!r.resolved) {
    ctx.out(`${r.sessionId}: ${what} was already ${r.outcome}; nothing changed`);
    return;
  }
  ctx.out(`${r.outcome} ${what} of ${r.sessionId}${r.seq !== undefined ? ` at sequence ${r.seq}` : ''}`);
  ctx.out(
    r.resumeInputId
      ? `the turn resumes (input ${r.resumeInputId}); a running worker (sessiond start) runs it`
      : 'the turn still waits for something else (sessiond status shows what)',
  );
}

function parseData(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--data must be JSON, such as '{"ok":true}', '"yes"' or 42 (${(err as Error).message}).`);
  }
}

export function registerWaits(program: Command, ctx: CliContext): void {
  for (const outcome of ['approve', 'deny'] as const) {
    addLogOptions(
      program
        .command(outcome)
        .description(
          outcome === 'approve'
            ? 'approve a tool call a waiting turn asked about: it runs once when the turn resumes'
            : 'deny a tool call a waiting turn asked about: it never runs, and the model is told why',
        )
        .argument('<session>', 'session id')
        .argument('<call>', 'the call id (sessiond status SESSION lists what the turn waits for)')
        .option('--reason <text>', 'why (at most 1,000 characters): recorded, and told to the model on a denial')
        .option(BY_OPTION[0], BY_OPTION[1]),
      ctx,
    ).action(async (session: string, call: string, opts: DecideOptions) => {
      validateId(session, 'session id');
      await withSessions(opts, ctx, `sessiond-${outcome}`, async ({ sessions }) => {
        const options = { ...(opts.reason === undefined ? {} : { reason: opts.reason }), actor: opts.by ?? whoAmI() };
        const r = outcome === 'approve' ? await sessions.approve(session, call, options) : await sessions.deny(session, call, options);
        report(ctx, r, `call ${call}`);
      });
    });
  }
  addLogOptions(
    program
      .command('resolve')
      .description('deliver the value a waiting turn waits for (ctx.waitFor(NAME)): the turn resumes with it')
      .argument('<session>', 'session id')
      .argument('<name>', 'the name the turn waits for')
      .option('--data <json>', 'the value, as JSON (default: none)')
      .option(BY_OPTION[0], BY_OPTION[1]),
    ctx,
  ).action(async (session: string, name: string, opts: ResolveOptions) => {
    validateId(session, 'session id');
    const data = opts.data === undefined ? undefined : parseData(opts.data);
    await withSessions(opts, ctx, 'sessiond-resolve', async ({ sessions }) => {
      const by = { actor: opts.by ?? whoAmI() };
      report(ctx, await sessions.resolve(session, name, data === undefined ? by : { data, ...by }), `signal ${name}`);
    });
  });
}
