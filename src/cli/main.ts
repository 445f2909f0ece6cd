#!/usr/bin/env node
/**
 * The `sessiond` command. Only this file (through `cliContext`) reads `process.env`.
 */
import { CommanderError } from 'commander';
import { cliContext } from './context.ts';
import { describeError, exitCodeFor, ExitCode } from './exit.ts';
import { buildProgram } from './program.ts';
import { startTracing } from '../observability/otel-sdk.ts';

export async function main(argv: string[]): Promise<number> {
  const ctx = cliContext(process.env);
  const program = buildProgram(ctx);
  if (argv.length === 0) {
    program.outputHelp({ error: true });
    return ExitCode.Usage;
  }
  // the OpenTelemetry SDK is loaded only when OTEL_* asks for traces (src/observability/otel-sdk.ts)
  let tracing: Awaited<ReturnType<typeof startTracing>>;
  try {
    tracing = await startTracing(process.env);
  } catch (err) {
    ctx.err(describeError(err, process.env.SESSIOND_DEBUG === '1'));
    return exitCodeFor(err);
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
  } finally {
    await tracing?.shutdown();
  }
}

const code = await main(process.argv.slice(2));
process.exitCode = code;
