import { isSessiondError, messageOf, ErrorCode } from '../errors.ts';

/** Exit codes: 0 ok, 1 the command failed, 2 the command was used wrongly, 3 a server or worker could not be reached (retry later). */
export const ExitCode = { Ok: 0, Failure: 1, Usage: 2, Unavailable: 3 } as const;

const usageCodes = new Set<string>([ErrorCode.InvalidId, ErrorCode.InvalidOption]);

/** A user's mistake: printed plainly, without a stack trace. */
export class UsageError extends Error {}

export function exitCodeFor(err: unknown): number {
  if (err instanceof UsageError) return ExitCode.Usage;
  if (isSessiondError(err) && usageCodes.has(err.code)) return ExitCode.Usage;
  if (isSessiondError(err, ErrorCode.Unavailable)) return ExitCode.Unavailable;
  return ExitCode.Failure;
}

/** One line for the terminal: `sessiond: <message>`; stacks only with SESSIOND_DEBUG=1. */
export function describeError(err: unknown, debug: boolean): string {
  const base = `sessiond: ${messageOf(err)}`;
  return debug && err instanceof Error && err.stack ? `${base}\n${err.stack}` : base;
}
