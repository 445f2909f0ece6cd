import { join } from 'node:path';
import { watchStdout, type StdoutWatch } from './stdout-closed.ts';

/** What every command gets: where to print, and the defaults read from the environment. */
export interface CliContext {
  /** A line on stdout; dropped once stdout is closed (`sessiond ... | head`). */
  out: (line: string) => void;
  err: (line: string) => void;
  /** Whether stdout's reader went away, and what to do then (stdout-closed.ts). */
  stdout: StdoutWatch;
  env: NodeJS.ProcessEnv;
  defaultDb: string;
  defaultNats: string | undefined;
}

export const DEFAULT_DB_FILE = join('.sessiond', 'sessiond.db');

export function cliContext(env: NodeJS.ProcessEnv): CliContext {
  const stdout = watchStdout(process.stdout);
  return {
    out: (line) => {
      if (!stdout.closed) process.stdout.write(`${line}\n`);
    },
    err: (line) => process.stderr.write(`${line}\n`),
    stdout,
    env,
    defaultDb: env.SESSIOND_DB || DEFAULT_DB_FILE,
    defaultNats: env.SESSIOND_NATS || undefined,
  };
}
