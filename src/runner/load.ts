/**
 * Finds the runner a worker should use: the built-in `echo`, or a module path whose default
 * export (or `runner` export) is a runner function. A TypeScript module needs a loader when sessiond
 * runs compiled (src/runner/user-module.ts: the user's tsx, or a clear error).
 */
import { ErrorCode, SessiondError } from '../errors.ts';
import { echoRunner, type EchoOptions } from './echo.ts';
import type { Runner } from './types.ts';
import { importUserModule } from './user-module.ts';

export async function loadRunner(spec: string, echo: EchoOptions = {}): Promise<Runner> {
  if (spec === 'echo') return echoRunner(echo);
  const mod = await importUserModule(spec, 'runner module', { hint: 'Pass "echo" or a path to a module exporting a runner function.' });
  const fn = mod.default ?? mod.runner;
  if (typeof fn !== 'function') {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Runner module ${spec} has no runner: export a function as default or as "runner" (async (ctx) => { ... }).`,
    );
  }
  return fn as Runner;
}
