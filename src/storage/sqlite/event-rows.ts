/**
 * How a SQLite file stores events, for everything that reads or writes them. Since schema 22 an
 * append is one row of `event_batch`: the session, its last sequence and position, how many events,
 * the first event's id, the commit time, and the events' frames packed together (each event's id,
 * type, version, time and payload bytes, the payload exactly as it was packed). Each event keeps a
 * position of its own: the batch holds positions `position - count + 1` to `position`, and sequences
 * `last_seq - count + 1` to `last_seq`. One row and two index entries per append, where the older
 * `event` table had a row and three index entries per event (docs/architecture.md#storage,
 * bench/README.md hot path step 10).
 *
 * Files of older schemas (opened read-only, never migrated) still have the `event` table, a row per
 * event; `storedEvents` reads either layout as the same per-event rows.
 */
import { ErrorCode, SessiondError, messageOf } from '../../errors.ts';
import { unpack } from '../../events/codec.ts';
import type { Db } from './database.ts';

/** One stored event as a row: what the `event` table held, and what a batch row holds per event. */
export interface EventRow {
  position: number;
  id: string;
  aggregate_id: string;
  seq: number;
  type: string;
  version: number;
  time: number;
  data: Buffer | Uint8Array;
  committed_at?: number | null;
}

/** A row of `event_batch` as better-sqlite3 returns it. */
export interface BatchRow {
  position: number;
  aggregate_id: string;
  last_seq: number;
  count: number;
  /** The id of the batch's first event: unique in the file (an append reusing it is refused, or recognised as a retry). */
  first_id: string;
  committed_at: number | null;
  frames: Buffer;
}

/** One event's frame in a batch: id, type, version, time and the payload's packed bytes. */
export type Frame = [id: string, type: string, version: number, time: number, data: Uint8Array];

/**
 * The frames as one msgpack array of `[id, type, version, time, payload bytes]`, written directly
 * (the payloads are packed already: msgpackr would copy them through its encoder once more).
 */
export function packFrames(frames: Frame[]): Uint8Array {
  let size = headerSize(frames.length, 0x0f);
  for (const [id, type, version, time, data] of frames) {
    size += 1 + strSize(id) + strSize(type) + uintSize(version) + uintSize(time) + binHeaderSize(data.byteLength) + data.byteLength;
  }
  const out = Buffer.allocUnsafe(size);
  let at = writeArrayHeader(out, 0, frames.length);
  for (const [id, type, version, time, data] of frames) {
    out[at++] = 0x95; // fixarray of 5
    at = writeStr(out, at, id);
    at = writeStr(out, at, type);
    at = writeUint(out, at, version);
    at = writeUint(out, at, time);
    at = writeBinHeader(out, at, data.byteLength);
    out.set(data, at);
    at += data.byteLength;
  }
  return out;
}

const headerSize = (n: number, fix: number) => (n <= fix ? 1 : n < 0x10000 ? 3 : 5);
const strSize = (s: string) => {
  const n = Buffer.byteLength(s, 'utf8');
  return (n < 32 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : 5) + n;
};
const binHeaderSize = (n: number) => (n < 0x100 ? 2 : n < 0x10000 ? 3 : 5);
function uintSize(v: number): number {
  if (!Number.isSafeInteger(v) || v < 0)
    throw new SessiondError(ErrorCode.InvalidPayload, `Cannot store ${v} as a version or time: expected a whole number >= 0.`);
  return v < 0x80 ? 1 : v < 0x100 ? 2 : v < 0x10000 ? 3 : v < 0x100000000 ? 5 : 9;
}
function writeArrayHeader(out: Buffer, at: number, n: number): number {
  if (n < 16) out[at++] = 0x90 | n;
  else if (n < 0x10000) {
    out[at++] = 0xdc;
    at = out.writeUInt16BE(n, at);
  } else {
    out[at++] = 0xdd;
    at = out.writeUInt32BE(n, at);
  }
  return at;
}
function writeStr(out: Buffer, at: number, s: string): number {
  const n = Buffer.byteLength(s, 'utf8');
  if (n < 32) out[at++] = 0xa0 | n;
  else if (n < 0x100) {
    out[at++] = 0xd9;
    out[at++] = n;
  } else if (n < 0x10000) {
    out[at++] = 0xda;
    at = out.writeUInt16BE(n, at);
  } else {
    out[at++] = 0xdb;
    at = out.writeUInt32BE(n, at);
  }
  return at + out.write(s, at, 'utf8');
}
function writeUint(out: Buffer, at: number, v: number): number {
  if (v < 0x80) out[at++] = v;
  else if (v < 0x100) {
    out[at++] = 0xcc;
    out[at++] = v;
  } else if (v < 0x10000) {
    out[at++] = 0xcd;
    at = out.writeUInt16BE(v, at);
  } else if (v < 0x100000000) {
    out[at++] = 0xce;
    at = out.writeUInt32BE(v, at);
  } else {
    out[at++] = 0xcf;
    at = out.writeBigUInt64BE(BigInt(v), at);
  }
  return at;
}
function writeBinHeader(out: Buffer, at: number, n: number): number {
  if (n < 0x100) {
    out[at++] = 0xc4;
    out[at++] = n;
  } else if (n < 0x10000) {
    out[at++] = 0xc5;
    at = out.writeUInt16BE(n, at);
  } else {
    out[at++] = 0xc6;
    at = out.writeUInt32BE(n, at);
  }
  return at;
}

/** The batch's events as per-event rows; a batch whose frames cannot be read throws, naming it. */
export function rowsOfBatch(row: BatchRow): EventRow[] {
  const first = row.position - row.count + 1;
  const firstSeq = row.last_seq - row.count + 1;
  const bad = (why: string, cause?: unknown): never => {
    throw new SessiondError(
      ErrorCode.DecodeFailed,
      `Event batch at positions ${first}-${row.position} (session ${row.aggregate_id}, seq ${firstSeq}-${row.last_seq}) is not a valid sessiond batch: ${why}. The database was changed by something other than sessiond: run sessiond check.`,
      { cause, details: { position: row.position, sessionId: row.aggregate_id, seq: firstSeq } },
    );
  };
  let frames: unknown;
  try {
    frames = unpack(row.frames);
  } catch (err) {
    return bad(`its frames are not valid msgpack (${messageOf(err)})`, err);
  }
  if (!Array.isArray(frames) || frames.length !== row.count) return bad(`expected ${row.count} frames`);
  const out: EventRow[] = new Array(row.count);
  for (let i = 0; i < row.count; i++) {
    const f = frames[i] as unknown[];
    if (!Array.isArray(f) || f.length !== 5 || typeof f[0] !== 'string' || typeof f[1] !== 'string' || !(f[4] instanceof Uint8Array)) {
      return bad(`frame ${i} is not [id, type, version, time, payload]`);
    }
    out[i] = {
      position: first + i,
      id: f[0],
      aggregate_id: row.aggregate_id,
      seq: firstSeq + i,
      type: f[1],
      version: f[2] as number,
      time: f[3] as number,
      data: f[4],
      committed_at: row.committed_at,
    };
  }
  return out;
}

const hasTable = (db: Db, name: string) => db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;

/**
 * Writes batch rows (the statement prepared once): the events `frames`, ending at `position` and at
 * the session's sequence `lastSeq`; the row's count and first id come from the frames. A first id
 * already in the file fails with SQLite's `SQLITE_CONSTRAINT_UNIQUE` (`isUniqueViolation`).
 */
export function batchWriter(db: Db): (position: number, sessionId: string, lastSeq: number, frames: Frame[], committedAt: number | null) => void {
  const insert = db.prepare('INSERT INTO event_batch (position, aggregate_id, last_seq, count, first_id, committed_at, frames) VALUES (?, ?, ?, ?, ?, ?, ?)');
  return (position, sessionId, lastSeq, frames, committedAt) => {
    insert.run(position, sessionId, lastSeq, frames.length, frames[0]![0], committedAt, packFrames(frames));
  };
}

/** Whether `err` is SQLite refusing a row that a unique index already holds. */
export const isUniqueViolation = (err: unknown): boolean => (err as { code?: string } | null)?.code === 'SQLITE_CONSTRAINT_UNIQUE';

/**
 * Reads the highest position the file ever handed out (AUTOINCREMENT's own record: deleted newest
 * positions are never reused); 0 before the first append. The statement is prepared once.
 */
export function highPositionReader(db: Db): () => number {
  const high = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'event_batch'").pluck();
  return () => (high.get() as number | undefined) ?? 0;
}

/** Whether the file stores events as batches (schema 22 and later). */
export const storesBatches = (db: Db): boolean => hasTable(db, 'event_batch');

/** Per-event reads of a file's events, whichever layout it has (prepared once). */
export interface StoredEvents {
  readonly batches: boolean;
  /** Up to `limit` (all when negative) events after position `after`, in position order. */
  after(after: number, limit: number): EventRow[];
  /** Up to `limit` (all when negative) events of the session after sequence `afterSeq`. */
  session(sessionId: string, afterSeq: number, limit: number): EventRow[];
  lastSeq(sessionId: string): number;
  /** The highest position stored (0 when none). */
  head(): number;
  /** How many events the file holds. */
  count(): number;
  /** The session's event count and last sequence. */
  sessionCount(sessionId: string): { n: number; last: number };
}

/** Drops what lies at or before the bound and keeps at most `limit` (all when negative). */
function trim(rows: EventRow[], keep: (r: EventRow) => boolean, limit: number): EventRow[] {
  let start = 0;
  while (start < rows.length && !keep(rows[start]!)) start++;
  const end = limit < 0 ? rows.length : Math.min(rows.length, start + limit);
  return start === 0 && end === rows.length ? rows : rows.slice(start, end);
}

function flatten(batches: BatchRow[]): EventRow[] {
  if (batches.length === 1) return rowsOfBatch(batches[0]!);
  const out: EventRow[] = [];
  for (const b of batches) for (const r of rowsOfBatch(b)) out.push(r);
  return out;
}

/**
 * The file's events, per event. A file read in the older layout and migrated meanwhile (a newer
 * worker upgraded it under a reader: migration 22 drops the `event` table) is read in the new one.
 */
export function storedEvents(db: Db): StoredEvents {
  let impl = storesBatches(db) ? batchEvents(db) : legacyEvents(db);
  const migrated = () => !impl.batches && storesBatches(db) && (impl = batchEvents(db));
  const read = <T>(f: (s: StoredEvents) => T): T => {
    try {
      return f(impl);
    } catch (err) {
      if (!/no such table: event\b/.test(messageOf(err)) || !migrated()) throw err;
      return f(impl);
    }
  };
  return {
    get batches() {
      migrated();
      return impl.batches;
    },
    after: (after, limit) => read((s) => s.after(after, limit)),
    session: (sessionId, afterSeq, limit) => read((s) => s.session(sessionId, afterSeq, limit)),
    lastSeq: (sessionId) => read((s) => s.lastSeq(sessionId)),
    head: () => read((s) => s.head()),
    count: () => read((s) => s.count()),
    sessionCount: (sessionId) => read((s) => s.sessionCount(sessionId)),
  };
}

function batchEvents(db: Db): StoredEvents {
  const all = db.prepare('SELECT * FROM event_batch WHERE position > ? ORDER BY position LIMIT ?');
  const session = db.prepare('SELECT * FROM event_batch WHERE aggregate_id = ? AND last_seq > ? ORDER BY last_seq LIMIT ?');
  const lastSeq = db.prepare('SELECT COALESCE(MAX(last_seq), 0) FROM event_batch WHERE aggregate_id = ?').pluck();
  const head = db.prepare('SELECT COALESCE(MAX(position), 0) FROM event_batch').pluck();
  const count = db.prepare('SELECT COALESCE(SUM(count), 0) FROM event_batch').pluck();
  const sessionCount = db.prepare('SELECT COALESCE(SUM(count), 0) AS n, COALESCE(MAX(last_seq), 0) AS last FROM event_batch WHERE aggregate_id = ?');
  return {
    batches: true,
    // a batch holds at least one event: `limit` batches hold at least `limit` events
    after: (after, limit) => trim(flatten(all.all(after, limit) as BatchRow[]), (r) => r.position > after, limit),
    session: (sessionId, afterSeq, limit) => trim(flatten(session.all(sessionId, afterSeq, limit) as BatchRow[]), (r) => r.seq > afterSeq, limit),
    lastSeq: (sessionId) => lastSeq.get(sessionId) as number,
    head: () => head.get() as number,
    count: () => count.get() as number,
    sessionCount: (sessionId) => sessionCount.get(sessionId) as { n: number; last: number },
  };
}

/** A file of schema 21 or older: a row per event. */
function legacyEvents(db: Db): StoredEvents {
  const all = db.prepare('SELECT * FROM event WHERE position > ? ORDER BY position LIMIT ?');
  const session = db.prepare('SELECT * FROM event WHERE aggregate_id = ? AND seq > ? ORDER BY seq LIMIT ?');
  const lastSeq = db.prepare('SELECT COALESCE(MAX(seq), 0) FROM event WHERE aggregate_id = ?').pluck();
  const head = db.prepare('SELECT COALESCE(MAX(position), 0) FROM event').pluck();
  const count = db.prepare('SELECT COUNT(*) FROM event').pluck();
  const sessionCount = db.prepare('SELECT COUNT(*) AS n, COALESCE(MAX(seq), 0) AS last FROM event WHERE aggregate_id = ?');
  return {
    batches: false,
    after: (after, limit) => all.all(after, limit) as EventRow[],
    session: (sessionId, afterSeq, limit) => session.all(sessionId, afterSeq, limit) as EventRow[],
    lastSeq: (sessionId) => lastSeq.get(sessionId) as number,
    head: () => head.get() as number,
    count: () => count.get() as number,
    sessionCount: (sessionId) => sessionCount.get(sessionId) as { n: number; last: number },
  };
}
