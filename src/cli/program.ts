/**
 * The `sessiond` command's program: every subcommand registered on one commander instance. Separate
 * from main.ts (which runs it) so tests can build it without running anything.
 */
import { Command } from 'commander';
import type { CliContext } from './context.ts';
import { registerMigrate } from './commands/migrate.ts';
import { registerStart } from './commands/start.ts';
import { registerServe } from './commands/serve.ts';
import { registerPrompt } from './commands/prompt.ts';
import { registerStatus } from './commands/status.ts';
import { registerCancel } from './commands/cancel.ts';
import { registerWake } from './commands/wake.ts';
import { registerWaits } from './commands/waits.ts';
import { registerSessionsList } from './commands/sessions-list.ts';
import { registerFork } from './commands/fork.ts';
import { registerDelete } from './commands/delete.ts';
import { registerTail } from './commands/tail.ts';
import { registerCheck } from './commands/check.ts';
import { registerBlobs } from './commands/blobs.ts';
import { registerVerify } from './commands/verify.ts';
import { registerExport } from './commands/export.ts';
import { registerReplay } from './commands/replay.ts';
import { registerChart } from './commands/chart.ts';
import { registerSetup } from './commands/setup.ts';
import { registerInspect } from './commands/inspect.ts';
import { registerLimits } from './commands/limits.ts';
import { registerBudget } from './commands/budget.ts';

export function buildProgram(ctx: CliContext): Command {
  const program = new Command('sessiond')
    .description('durable, single-owner execution of sessions over an event log')
    .showHelpAfterError(true)
    .exitOverride()
    .configureOutput({ writeOut: (s) => process.stdout.write(s), writeErr: (s) => process.stderr.write(s) });
  registerMigrate(program, ctx);
  registerStart(program, ctx);
  registerServe(program, ctx);
  registerPrompt(program, ctx);
  registerStatus(program, ctx);
  registerWake(program, ctx);
  registerCancel(program, ctx);
  registerWaits(program, ctx);
  registerSessionsList(program, ctx);
  registerBudget(program, ctx);
  registerFork(program, ctx);
  registerDelete(program, ctx);
  registerTail(program, ctx);
  registerCheck(program, ctx);
  registerBlobs(program, ctx);
  registerVerify(program, ctx);
  registerExport(program, ctx);
  registerReplay(program, ctx);
  registerChart(program, ctx);
  registerSetup(program, ctx);
  registerInspect(program, ctx);
  registerLimits(program, ctx);
  for (const cmd of program.commands) cmd.exitOverride().showHelpAfterError(true);
  return program;
}
