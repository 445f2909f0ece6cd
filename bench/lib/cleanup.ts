/**
 * Everything the benchmark starts is registered here and stopped at the end, however the run ends:
 * normally (run.ts calls `cleanupAll()` in a finally), on an uncaught error, or on SIGINT/SIGTERM
 * (the handlers below exit, and the synchronous 'exit' hook kills children and removes temp dirs).
 * nats-server.ts and test/support/processes.ts have exit hooks of their own for what they start.
 */
import type { ChildProcess } from 'node:child_process';
import { tempDir as freshDir } from '../../test/support/tmp.ts';

type AsyncCleanup = () => Promise<void> | void;

/** Temp dirs to remove at the end, each with its `remove`. */
const dirs = new Map<string, () => void>();
const children = new Set<ChildProcess>();
const asyncCleanups: { name: string; fn: AsyncCleanup }[] = [];
let hooked = false;

function hook(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const c of children) {
      if (c.exitCode === null && c.signalCode === null) {
        try {
          c.kill('SIGKILL');
        } catch {
          /* gone */
        }
      }
    }
    for (const remove of dirs.values()) remove();
  });
  process.once('SIGINT', () => {
    process.stderr.write('\nbench: SIGINT, cleaning up\n');
    void cleanupAll().finally(() => process.exit(130));
  });
  process.once('SIGTERM', () => {
    void cleanupAll().finally(() => process.exit(143));
  });
}

/** A fresh temp directory (test/support/tmp.ts makes it), removed at the end. */
export function tempDir(prefix = 'sessiond-bench-'): string {
  hook();
  const { dir, remove } = freshDir(prefix);
  dirs.set(dir, remove);
  return dir;
}

/** Removes a directory `tempDir` made, now rather than at the end. */
export function removeDir(dir: string): void {
  dirs.get(dir)?.();
  dirs.delete(dir);
}

/** A child process to SIGKILL at the end if it is still running. */
export function trackChild(child: ChildProcess): ChildProcess {
  hook();
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** An async cleanup (closing a connection, disposing a server), run in reverse order by `cleanupAll`. */
export function onCleanup(name: string, fn: AsyncCleanup): () => void {
  hook();
  const entry = { name, fn };
  asyncCleanups.push(entry);
  return () => {
    const i = asyncCleanups.indexOf(entry);
    if (i >= 0) asyncCleanups.splice(i, 1);
  };
}

let cleaning: Promise<void> | undefined;

/** Runs every registered cleanup (each bounded to 10 s), kills children, removes temp dirs. */
export function cleanupAll(): Promise<void> {
  cleaning ??= (async () => {
    while (asyncCleanups.length > 0) {
      const { name, fn } = asyncCleanups.pop()!;
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          Promise.resolve().then(fn),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error('timed out after 10 s')), 10_000);
          }),
        ]);
      } catch (err) {
        process.stderr.write(`bench: cleanup "${name}" failed: ${(err as Error).message}\n`);
      } finally {
        clearTimeout(timer);
      }
    }
    for (const c of children) {
      if (c.exitCode === null && c.signalCode === null) {
        c.kill('SIGKILL');
        await new Promise((r) => {
          c.once('exit', r);
          setTimeout(r, 2000).unref();
        });
      }
    }
    for (const d of [...dirs.keys()]) removeDir(d);
  })();
  return cleaning;
}
