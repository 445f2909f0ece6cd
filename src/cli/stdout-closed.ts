/**
 * A closed stdout ends a command quietly, as `yes | head` ends: `sessiond status --json | head`,
 * `sessiond tail | grep -m1 ...`, a log reader that went away. The first failed write (EPIPE) marks
 * stdout closed; what the command would still print is dropped, nothing goes to stderr about it, and
 * the command exits as it would have (0 when it did its work). A command that was changing something
 * finishes it (a retention is not cut off between two deletions); one that runs until stopped
 * (`tail`, `start`) stops as on Ctrl-C, through `onClosed`.
 *
 *   const stdout = watchStdout(process.stdout);
 *   stdout.onClosed(() => stopFollowing());
 *   if (!stdout.closed) process.stdout.write(line);
 *
 * Any other write error (a full disk behind `> file`) is not a closed pipe and stays loud.
 */
import type { EventEmitter } from 'node:events';

export interface StdoutWatch {
  /** True once a write found the reader gone. */
  readonly closed: boolean;
  /** Runs `then` once when stdout closes (at once if it has); the returned function cancels it. */
  onClosed(then: () => void): () => void;
  /** Watches another writer of fd 1 (the worker's JSON log writes it directly). */
  watch(writer: EventEmitter): void;
}

/** EPIPE: the reading end of the pipe is closed. */
export function isClosedPipe(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'EPIPE';
}

export function watchStdout(stdout: EventEmitter): StdoutWatch {
  let closed = false;
  const waiting = new Set<() => void>();
  const onError = (err: unknown) => {
    if (!isClosedPipe(err)) throw err; // as without this listener: an uncaught error, loud
    if (closed) return;
    closed = true;
    for (const then of [...waiting]) then();
    waiting.clear();
  };
  const watch = (writer: EventEmitter) => void writer.on('error', onError);
  watch(stdout);
  return {
    get closed() {
      return closed;
    },
    onClosed(then) {
      if (closed) {
        then();
        return () => {};
      }
      waiting.add(then);
      return () => void waiting.delete(then);
    },
    watch,
  };
}
