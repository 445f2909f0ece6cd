/**
 * `sessiond wake SESSION`: runs the session's pending inputs and says in plain words what happened;
 * with `--nats`, the `wake` command. On a SQLite file (read-only) the worker watching it runs them;
 * inputs admitted `--no-wake` are said with what to do. Exit codes: 0 woken or running, 1 nothing to
 * run or refused, 66 no such session, 69 the worker that took it is stopping.
 */
import type { Command } from 'commander';
import { validateId } from '../../ids.ts';
import { ConnectionError, SessiondError } from '../../errors.ts';
import { Refusal } from '../../machines/commands.ts';
import type { WakeResult } from '../../sessions/sessions.ts';
import type { CliContext } from '../context.ts';
import { ExitCode } from '../exit.ts';
import { addLogOptions, type LogOptions } from '../log-options.ts';
import { withSessions } from '../open-sessions.ts';

export function registerWake(program: Command, ctx: CliContext): void {
  addLogOptions(
    program
      .command('wake')
      .description("run a session's pending inputs (those admitted with --no-wake, or left after a stop); says what happened")
      .argument('<session>', 'session id'),
    ctx,
  ).action(async (session: string, opts: LogOptions) => {
    validateId(session, 'session id');
    await withSessions(
      opts,
      ctx,
      'sessiond-wake',
      async ({ sessions, describe, remote }) => {
        const said = describeWake(session, await sessions.wake(session), { remote, describe });
        for (const line of said.lines) ctx.out(line);
        if (said.exitCode !== ExitCode.Ok) process.exitCode = said.exitCode;
      },
      { readsFile: true },
    );
  });
}

/** What a wake did, in plain words, and the exit code it ends with; a failure is thrown (its kind picks the code). */
export function describeWake(session: string, result: WakeResult, where: { remote: boolean; describe: string }): { lines: string[]; exitCode: number } {
  switch (result.status) {
    case 'started':
      return { lines: [`woke ${session}: a turn started (execution ${result.executionId})`, `follow it: sessiond tail ${session}`], exitCode: ExitCode.Ok };
    case 'running_here':
      return {
        lines: [`${session}: a turn is already running${result.executionId ? ` (execution ${result.executionId})` : ''}; what is pending runs when it ends`],
        exitCode: ExitCode.Ok,
      };
    case 'requested':
      return {
        lines: [
          `${session}: its pending inputs asked for a wake, so the worker on ${where.describe} runs them (sessiond start --db ${where.describe}; none running: they wait for one)`,
        ],
        exitCode: ExitCode.Ok,
      };
    case 'nothing_pending':
      return { lines: [`${session}: nothing to run (no input is pending); admit one with sessiond prompt ${session} TEXT`], exitCode: ExitCode.Failure };
    case 'refused':
      if (result.reason === Refusal.NoWakePending && !where.remote)
        return {
          lines: [
            `${session}: not woken: its pending inputs were admitted with --no-wake, and a SQLite file holds no wake for the worker to act on.`,
            `  a prompt admitted with a wake runs them with it (sessiond prompt ${session} TEXT --db ${where.describe}), or wake it from a process that runs its turns (engine.wake)`,
          ],
          exitCode: ExitCode.Failure,
        };
      return { lines: [`${session}: not woken: ${result.message}`], exitCode: ExitCode.Failure };
    case 'closed':
      throw new ConnectionError(`The worker that took the wake of ${session} is stopping: run sessiond wake ${session} again (another worker takes it).`);
    case 'failed':
      throw new SessiondError(result.code, `Waking ${session} failed: ${result.message}`);
  }
}
