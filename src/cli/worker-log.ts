/**
 * What `sessiond start` prints: readable lines on a terminal, JSON lines (pino) otherwise or with
 * `--log-format json`: `level`, `time`, `msg`, the worker's id and the `session`, `execution`,
 * `event`/`notice` a line is about. Errors go to stderr as text, to stdout as level "error" in JSON
 * (docs/operating.md#logs).
 */
import { pino, stdTimeFunctions, destination, type Logger } from 'pino';
import type { CliContext } from './context.ts';
import { oneOf } from './options.ts';

export const LOG_FORMATS = ['text', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
export const LOG_FORMAT_OPTION = [
  '--log-format <text|json>',
  'how the worker prints: readable lines (default on a terminal) or JSON lines (default otherwise; env SESSIOND_LOG_FORMAT)',
] as const;
export const parseLogFormat = oneOf('--log-format', LOG_FORMATS);

export type LogFields = Record<string, string | number | boolean | undefined>;

export interface WorkerLog {
  out(line: string, fields?: LogFields): void;
  err(line: string, fields?: LogFields): void;
  /** Adds fields to every later line (e.g. the worker id once it is known). */
  bind(fields: LogFields): void;
}

/** The format asked for, else SESSIOND_LOG_FORMAT, else text on a terminal and JSON otherwise. */
export function logFormat(asked: LogFormat | undefined, env: NodeJS.ProcessEnv, isTTY: boolean | undefined): LogFormat {
  if (asked) return asked;
  if (env.SESSIOND_LOG_FORMAT) return parseLogFormat(env.SESSIOND_LOG_FORMAT);
  return isTTY ? 'text' : 'json';
}

export function workerLog(ctx: Pick<CliContext, 'out' | 'err' | 'stdout'>, format: LogFormat): WorkerLog {
  if (format === 'text') return { out: (line) => ctx.out(line), err: (line) => ctx.err(line), bind: () => {} };
  const fd1 = destination({ fd: 1, sync: true }); // sync: nothing lost when the worker exits right after
  ctx.stdout.watch(fd1); // it writes fd 1 itself: its EPIPE is a closed stdout too
  let logger: Logger = pino(
    {
      base: null,
      timestamp: stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    fd1,
  );
  return {
    out: (line, fields) => {
      if (!ctx.stdout.closed) logger.info(fields ?? {}, line.trim());
    },
    // an error still has somewhere to go when stdout's reader is gone
    err: (line, fields) => (ctx.stdout.closed ? ctx.err(line) : logger.error(fields ?? {}, line.replace(/^sessiond: /, ''))),
    bind: (fields) => {
      logger = logger.child(fields);
    },
  };
}
