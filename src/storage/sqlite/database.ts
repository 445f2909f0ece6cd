/**
 * Opening a sessiond SQLite database: WAL (several processes share one file, readers never block the
 * writer), foreign keys on, a busy timeout so concurrent writers wait, synchronous=NORMAL by default
 * (FULL selectable). What each survives: docs/architecture.md#storage.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { ErrorCode, SessiondError } from '../../errors.ts';
import { isTransientStorageError } from './transient.ts';

export type Db = Database.Database;

export const DEFAULT_BUSY_TIMEOUT_MS = 5_000;
export type Synchronous = 'NORMAL' | 'FULL';

export interface OpenOptions {
  synchronous?: Synchronous;
  busyTimeoutMs?: number;
  readonly?: boolean;
}

export function openDatabase(file: string, options: OpenOptions = {}): Db {
  const synchronous = options.synchronous ?? 'NORMAL';
  if (synchronous !== 'NORMAL' && synchronous !== 'FULL') {
    throw new SessiondError(ErrorCode.InvalidOption, `Invalid option synchronous=${JSON.stringify(synchronous)}: use "NORMAL" or "FULL".`);
  }
  const busy = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  if (!Number.isInteger(busy) || busy < 0) {
    throw new SessiondError(ErrorCode.InvalidOption, `Invalid option busyTimeoutMs=${String(busy)}: use a whole number of milliseconds >= 0.`);
  }
  if (file !== ':memory:' && !options.readonly) mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file, { readonly: options.readonly ?? false, timeout: busy });
  db.pragma(`busy_timeout = ${busy}`);
  if (!options.readonly) enterWal(db, file, busy);
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma('foreign_keys = ON');
  return db;
}

/**
 * Switches to WAL, waiting up to `busyMs` for another connection's write lock. On a file still in
 * rollback mode (new, and another process converting it too) SQLite answers the switch with
 * SQLITE_BUSY at once, without its busy timeout: the switch upgrades a read to a write.
 */
function enterWal(db: Db, file: string, busyMs: number): void {
  const deadline = performance.now() + busyMs;
  for (let attempt = 0; ; attempt++) {
    let mode: unknown;
    try {
      mode = db.pragma('journal_mode = WAL', { simple: true });
    } catch (err) {
      if (!isTransientStorageError(err)) {
        db.close();
        throw err;
      }
      if (performance.now() >= deadline) {
        db.close();
        throw new SessiondError(
          ErrorCode.Unavailable,
          `Could not open ${file} in WAL mode: another process held its write lock for longer than the busy timeout (${busyMs} ms). Try again, or give a longer busy timeout.`,
          { cause: err },
        );
      }
      Atomics.wait(PAUSE, 0, 0, Math.min(50, 2 ** attempt)); // a blocking pause: opening is synchronous
      continue;
    }
    if (mode !== 'wal' && file !== ':memory:') {
      db.close();
      throw new SessiondError(
        ErrorCode.InvalidOption,
        `Could not open ${file} in WAL mode (SQLite kept journal mode ${String(mode)}): use a local file system.`,
      );
    }
    return;
  }
}

const PAUSE = new Int32Array(new SharedArrayBuffer(4));
