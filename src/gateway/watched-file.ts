/**
 * A file read again when it changes: `fs.watch` on its directory (editors replace files by rename)
 * plus a periodic stat as the fallback where watching is unreliable (network and container file
 * systems). `onText` gets the new text; what it does with text that does not parse is its own.
 */
import { type FSWatcher, readFileSync, statSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import { type Clock, type TimerHandle, systemClock } from '../clock.ts';
import { messageOf } from '../errors.ts';

export const DEFAULT_RELOAD_POLL_MS = 2_000;

export interface WatchedFileOptions {
  /** How often the file is stat'ed besides watching (default 2 s). */
  pollMs?: number;
  clock?: Clock;
  /** The file could not be read (it keeps what it had). */
  onError: (message: string) => void;
}

export interface WatchedFile {
  close(): void;
}

const stamp = (path: string): string => {
  const s = statSync(path);
  return `${s.ino}:${s.size}:${s.mtimeMs}`;
};

/** Calls `onText` with the file's text each time it changes (not for the text it has now). */
export function watchFile(path: string, onText: (text: string) => void, options: WatchedFileOptions): WatchedFile {
  const clock = options.clock ?? systemClock;
  const pollMs = options.pollMs ?? DEFAULT_RELOAD_POLL_MS;
  let seen = stampOrNull(path);
  let closed = false;
  let failing = false;
  const check = () => {
    if (closed) return;
    let now: string | null;
    let text: string;
    try {
      now = stamp(path);
      if (now === seen) return;
      text = readFileSync(path, 'utf8');
    } catch (err) {
      if (!failing) options.onError(`cannot read ${path} (${messageOf(err)}); keeping what was read before`);
      failing = true;
      return;
    }
    failing = false;
    seen = now;
    onText(text);
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(path), { persistent: false }, (_event, name) => {
      if (name === null || name === basename(path)) check();
    });
    watcher.on('error', () => {}); // the periodic stat goes on
  } catch {
    // no watching here: the periodic stat alone
  }
  let timer: TimerHandle | undefined;
  const tick = () => {
    check();
    if (!closed) timer = clock.setTimeout(tick, pollMs);
    if (timer && typeof timer === 'object' && 'unref' in timer) (timer as NodeJS.Timeout).unref();
  };
  timer = clock.setTimeout(tick, pollMs);
  if (timer && typeof timer === 'object' && 'unref' in timer) (timer as NodeJS.Timeout).unref();
  return {
    close() {
      closed = true;
      watcher?.close();
      clock.clearTimeout(timer);
    },
  };
}

function stampOrNull(path: string): string | null {
  try {
    return stamp(path);
  } catch {
    return null;
  }
}
