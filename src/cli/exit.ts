import { isSessiondError, messageOf, type ErrorKind } from '../errors.ts';

/**
 * Exit codes follow the kind of failure (the BSD sysexits values where one fits): 0 ok, 1 the
 * command failed (refused, a conflict, a failure), 2 the command was used wrongly (bad options,
 * ids, input), 65 stored data is corrupt, 66 what was asked for is not there, 69 a server or worker
 * could not be reached (retry later), 75 no answer in time (retry later), 77 the server refused
 * this user.
 */
export const ExitCode = { Ok: 0, Failure: 1, Usage: 2, DataError: 65, NotFound: 66, Unavailable: 69, Timeout: 75, NoPermission: 77 } as const;

const BY_KIND: Record<ErrorKind, number> = {
  invalid_input: ExitCode.Usage,
  corrupt_data: ExitCode.DataError,
  not_found: ExitCode.NotFound,
  unavailable: ExitCode.Unavailable,
  timeout: ExitCode.Timeout,
  permission: ExitCode.NoPermission,
  conflict: ExitCode.Failure,
  refused: ExitCode.Failure,
  failure: ExitCode.Failure,
};

export function exitCodeFor(err: unknown): number {
  return isSessiondError(err) ? BY_KIND[err.kind] : ExitCode.Failure;
}

/** One line for the terminal: `sessiond: <message>`; stacks only with SESSIOND_DEBUG=1. */
export function describeError(err: unknown, debug: boolean): string {
  const base = `sessiond: ${messageOf(err)}`;
  return debug && err instanceof Error && err.stack ? `${base}\n${err.stack}` : base;
}
