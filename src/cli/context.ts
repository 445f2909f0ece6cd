import { join } from 'node:path';

/** What every command gets: where to print, and the defaults read from the environment. */
export interface CliContext {
  out: (line: string) => void;
  err: (line: string) => void;
  env: NodeJS.ProcessEnv;
  defaultDb: string;
  defaultNats: string | undefined;
}

export const DEFAULT_DB_FILE = join('.sessiond', 'sessiond.db');

export function cliContext(env: NodeJS.ProcessEnv): CliContext {
  return {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    env,
    defaultDb: env.SESSIOND_DB || DEFAULT_DB_FILE,
    defaultNats: env.SESSIOND_NATS || undefined,
  };
}
