/**
 * A SQLite file's log read event by event for `verifyLog`: every stored event decoded on its own
 * through the one decoder (`eventFromFrame`, upcasters included), so an event the current code cannot
 * read is reported with its sequence instead of stopping the read (SqliteEventLog throws on it); a
 * batch row whose frames cannot be read at all is reported once, at its first sequence. Reads only:
 * the database may be opened read-only, and any schema version with an `event` or `event_batch` table.
 */
import { ErrorCode, isSessiondError, messageOf } from '../errors.ts';
import { eventFromFrame, unpack } from '../events/codec.ts';
import type { Db } from '../storage/sqlite/database.ts';
import type { StoredItem, StoredLog, StoredSnapshot } from './stored-log.ts';

import { type BatchRow, type EventRow, rowsOfBatch, storesBatches } from '../storage/sqlite/event-rows.ts';

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

/** A batch row's events, each decoded on its own; frames that cannot be read at all: one undecodable item. */
function decodeBatch(row: BatchRow): StoredItem[] {
  let rows: EventRow[];
  try {
    rows = rowsOfBatch(row);
  } catch (err) {
    if (!isSessiondError(err)) throw err;
    const seq = row.last_seq - row.count + 1;
    return [{ undecodable: { sessionId: row.aggregate_id, seq, position: row.position - row.count + 1, code: err.code, reason: err.message } }];
  }
  return rows.map(decodeRow);
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
  const batches = storesBatches(db);
  const table = batches ? 'event_batch' : 'event';
  const all = db.prepare(`SELECT * FROM ${table} WHERE position > ? ORDER BY position LIMIT ?`);
  const bySession = db.prepare(
    `SELECT * FROM ${table} WHERE aggregate_id = ? AND ${batches ? 'last_seq' : 'seq'} > ? ORDER BY ${batches ? 'last_seq' : 'seq'} LIMIT ?`,
  );
  const decode = (rows: unknown[]): StoredItem[] => (batches ? (rows as BatchRow[]).flatMap(decodeBatch) : (rows as EventRow[]).map(decodeRow));
  const snapshots = hasTable(db, 'session_snapshot') ? db.prepare('SELECT seq, machine, data FROM session_snapshot WHERE session_id = ?') : undefined;
  return {
    describe: options.describe,
    notes: options.notes ?? [],
    problems: [],
    ...(options.projectionDb === null ? {} : { projectionDb: options.projectionDb ?? db }),
    async *pages() {
      for (let after = 0; ; ) {
        const rows = all.all(after, pageSize) as { position: number }[];
        if (rows.length === 0) return;
        after = rows[rows.length - 1]!.position;
        yield decode(rows);
      }
    },
    async *session(sessionId) {
      for (let after = 0; ; ) {
        const rows = bySession.all(sessionId, after, pageSize) as ({ seq: number } | { last_seq: number })[];
        if (rows.length === 0) return;
        const last = rows[rows.length - 1]!;
        after = 'last_seq' in last ? last.last_seq : last.seq;
        yield decode(rows);
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
      return db
        .prepare(batches ? 'SELECT COALESCE(SUM(count), 0) FROM event_batch' : 'SELECT COUNT(*) FROM event')
        .pluck()
        .get() as number;
    },
    close: options.close ?? (async () => undefined),
  };
}
