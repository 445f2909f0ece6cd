/**
 * A closed stdout (EPIPE) ends a command quietly, as `yes | head` ends: the rest of its output is
 * dropped, and a command that runs until stopped hears of it through `onClosed`; any other write error
 * stays loud (why: docs/operating.md#a-closed-stdout).
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
