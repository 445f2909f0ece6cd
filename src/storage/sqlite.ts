/**
 * Opening a sessiond SQLite database: WAL (several processes share one file, readers never block the
 * writer), foreign keys on, a busy timeout so concurrent writers wait, synchronous=NORMAL by default
 * (FULL selectable). What each survives: docs/architecture.md#storage.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { ErrorCode, SessiondError } from '../errors.ts';

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
  if (!options.readonly) db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma('foreign_keys = ON');
  return db;
}
