/**
 * A SQLite file's log read row by row for `verifyLog`: every row of `event` decoded on its own
 * through the one decoder (`eventFromFrame`, upcasters included), so a row the current code cannot
 * read is reported with its sequence instead of stopping the read (SqliteEventLog throws on it).
 * Reads only: the database may be opened read-only, and any schema version with an `event` table.
 */
import { ErrorCode, isSessiondError, messageOf } from '../errors.ts';
import { eventFromFrame, unpack } from '../events/codec.ts';
import type { Db } from '../storage/sqlite/database.ts';
import type { StoredItem, StoredLog, StoredSnapshot } from './stored-log.ts';

import type { EventRow } from '../storage/sqlite/sqlite-event-log.ts';

export const VERIFY_PAGE_SIZE = 1000;

/** One stored row, decoded or not: never throws for what the row holds. */
export function decodeRow(row: EventRow): StoredItem {
  const describe = `Event row ${row.position} (session ${row.aggregate_id}, seq ${row.seq})`;
  const undecodable = (code: string, reason: string): StoredItem => ({
    undecodable: { sessionId: row.aggregate_id, seq: row.seq, position: row.position, code, reason },
  });
  let payload: unknown;
  try {
    payload = unpack(row.data);
  } catch (err) {
    return undecodable(ErrorCode.DecodeFailed, `${describe} is not a valid sessiond event: its payload is not valid msgpack (${messageOf(err)}).`);
  }
  try {
    const frame = { id: row.id, type: row.type, version: row.version, sessionId: row.aggregate_id, seq: row.seq, time: row.time, payload };
    const committedAt = typeof row.committed_at === 'number' ? row.committed_at : undefined;
    return { event: eventFromFrame(frame, { describe, position: row.position, committedAt }) };
  } catch (err) {
    if (!isSessiondError(err)) throw err;
    return undecodable(err.code, err.message);
  }
}

const hasTable = (db: Db, name: string) => db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;

export interface SqliteSourceOptions {
  describe: string;
  notes?: string[];
  pageSize?: number;
  /** The projection to compare (default `db`'s own; none: `null`). */
  projectionDb?: Db | null;
  close?: () => Promise<void>;
}

export function sqliteSource(db: Db, options: SqliteSourceOptions): StoredLog {
  const pageSize = options.pageSize ?? VERIFY_PAGE_SIZE;
  const all = db.prepare('SELECT * FROM event WHERE position > ? ORDER BY position LIMIT ?');
  const bySession = db.prepare('SELECT * FROM event WHERE aggregate_id = ? AND seq > ? ORDER BY seq LIMIT ?');
  const snapshots = hasTable(db, 'session_snapshot') ? db.prepare('SELECT seq, machine, data FROM session_snapshot WHERE session_id = ?') : undefined;
  return {
    describe: options.describe,
    notes: options.notes ?? [],
    problems: [],
    ...(options.projectionDb === null ? {} : { projectionDb: options.projectionDb ?? db }),
    async *pages() {
      for (let after = 0; ; ) {
        const rows = all.all(after, pageSize) as EventRow[];
        if (rows.length === 0) return;
        after = rows[rows.length - 1]!.position;
        yield rows.map(decodeRow);
      }
    },
    async *session(sessionId) {
      for (let after = 0; ; ) {
        const rows = bySession.all(sessionId, after, pageSize) as EventRow[];
        if (rows.length === 0) return;
        after = rows[rows.length - 1]!.seq;
        yield rows.map(decodeRow);
      }
    },
    async snapshot(sessionId) {
      const row = snapshots?.get(sessionId) as { seq: number; machine: string; data: string } | undefined;
      if (!row) return undefined;
      let data: unknown;
      try {
        data = JSON.parse(row.data);
      } catch {
        data = undefined; // unreadable: the current code folds the session from the log instead
      }
      return { seq: row.seq, machine: row.machine, data } satisfies StoredSnapshot;
    },
    async size() {
      return db.prepare('SELECT COUNT(*) FROM event').pluck().get() as number;
    },
    close: options.close ?? (async () => undefined),
  };
}
