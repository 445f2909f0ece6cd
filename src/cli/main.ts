/**
 * The `sessiond` command. Only this file (through `cliContext`) reads `process.env`.
 */
import { Command, CommanderError } from 'commander';
import { cliContext } from './context.ts';
import { describeError, exitCodeFor, ExitCode } from './exit.ts';
import { registerMigrate } from './commands/migrate.ts';
import { registerStart } from './commands/start.ts';
import { registerPrompt } from './commands/prompt.ts';
import { registerStatus } from './commands/status.ts';
import { registerCancel } from './commands/cancel.ts';
import { registerTail } from './commands/tail.ts';
import { registerCheck } from './commands/check.ts';
import { registerExport } from './commands/export.ts';
import { registerReplay } from './commands/replay.ts';
import { registerChart } from './commands/chart.ts';
import { registerSetup } from './commands/setup.ts';

export function buildProgram(ctx = cliContext(process.env)): Command {
  const program = new Command('sessiond')
    .description('durable, single-owner execution of sessions over an event log')
    .showHelpAfterError(true)
    .exitOverride()
    .configureOutput({ writeOut: (s) => process.stdout.write(s), writeErr: (s) => process.stderr.write(s) });
  registerMigrate(program, ctx);
  registerStart(program, ctx);
  registerPrompt(program, ctx);
  registerStatus(program, ctx);
  registerCancel(program, ctx);
  registerTail(program, ctx);
  registerCheck(program, ctx);
  registerExport(program, ctx);
  registerReplay(program, ctx);
  registerChart(program, ctx);
  registerSetup(program, ctx);
  for (const cmd of program.commands) cmd.exitOverride().showHelpAfterError(true);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const ctx = cliContext(process.env);
  const program = buildProgram(ctx);
  if (argv.length === 0) {
    program.outputHelp({ error: true });
    return ExitCode.Usage;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    // a command that reports a failure in plain words sets process.exitCode (e.g. `check` finding violations)
    return typeof process.exitCode === 'number' && process.exitCode !== 0 ? process.exitCode : ExitCode.Ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // help and version exit 0; every other commander error is a usage error (already printed)
      return err.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage;
    }
    ctx.err(describeError(err, process.env.SESSIOND_DEBUG === '1'));
    return exitCodeFor(err);
  }
}

const code = await main(process.argv.slice(2));
process.exitCode = code;
