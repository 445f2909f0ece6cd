/**
 * Finds the runner a worker should use: the built-in `echo`, or a module path whose default
 * export (or `runner` export) is a runner function.
 */
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { ErrorCode, SessiondError, messageOf } from '../errors.ts';
import { echoRunner, type EchoOptions } from './echo.ts';
import type { Runner } from './types.ts';

export async function loadRunner(spec: string, echo: EchoOptions = {}): Promise<Runner> {
  if (spec === 'echo') return echoRunner(echo);
  let mod: Record<string, unknown>;
  try {
    mod = await import(pathToFileURL(resolve(spec)).href);
  } catch (err) {
    throw new SessiondError(ErrorCode.InvalidOption, `Cannot load runner module ${spec}: ${messageOf(err)}. Pass "echo" or a path to a module exporting a runner function.`, { cause: err });
  }
  const fn = mod.default ?? mod.runner;
  if (typeof fn !== 'function') {
    throw new SessiondError(ErrorCode.InvalidOption, `Runner module ${spec} has no runner: export a function as default or as "runner" (async (ctx) => { ... }).`);
  }
  return fn as Runner;
}
