/**
 * Deleting a session from a SQLite database: its events, projection rows, snapshot and quarantined
 * messages go in one transaction, and one `session_deletion` row records who deleted it, when, why,
 * how many events it had and where it was archived (never its content).
 */
import type { Db } from './database.ts';
import type { Clock } from '../../clock.ts';
import { sessionTails } from './session-tails.ts';
import { storedEvents } from './event-rows.ts';

export interface DeletionRecord {
  sessionId: string;
  deletedAt: number;
  deletedBy: string;
  reason: string | null;
  /** How many events the session had. */
  events: number;
  lastSeq: number;
  /** Where it was exported before it was deleted (`sessiond retain --archive`), or null. */
  archivedTo: string | null;
  /**
   * What became of the session's blobs (not recorded; only on the delete that did it): removed, kept
   * because another session references them (a fork), left to the sweep (put within its grace period).
   */
  blobs?: { removed: number; shared: number; left: number };
}

/** Every table that holds a session's data, and its session column. */
const SESSION_TABLES: readonly (readonly [table: string, column: string])[] = [
  ['event_batch', 'aggregate_id'],
  ['session_input', 'session_id'],
  ['session_message', 'session_id'],
  ['session_execution', 'session_id'],
  ['session_recovery', 'session_id'],
  ['session_wait', 'session_id'],
  ['session_snapshot', 'session_id'],
  ['inspector_checkpoint', 'session_id'],
  ['inspector_mark', 'session_id'],
  ['inspector_timeline', 'session_id'],
  ['inspector_head', 'session_id'],
  ['session_tag', 'session_id'],
  ['session_blob', 'session_id'],
  ['session', 'session_id'],
  ['quarantined_message', 'session_id'],
];

export interface DeletionAudit {
  now: number;
  by: string;
  reason?: string | undefined;
  archivedTo?: string | undefined;
  /**
   * A deletion made elsewhere (on NATS, by the admin; a worker applies it to its own projection):
   * the counts and the log's head at the delete (a stream sequence) as recorded there, instead of
   * counted from this file's events (it holds none on NATS).
   */
  known?: { events: number; lastSeq: number; headPosition: number };
  /** Whether to delete the session's rows (default yes; a worker keeps those of a later session of the id). */
  rows?: boolean;
}

export function deleteSessionData(db: Db, sessionId: string, audit: DeletionAudit): DeletionRecord {
  const stored = storedEvents(db);
  const deletes = SESSION_TABLES.map(([table, column]) => db.prepare(`DELETE FROM ${table} WHERE ${column} = ?`));
  const record = db.prepare(`INSERT INTO session_deletion (session_id, deleted_at, deleted_by, reason, events, last_seq, head_position, archived_to)
                             VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
  return db
    .transaction((): DeletionRecord => {
      const counted = audit.known ? undefined : stored.sessionCount(sessionId);
      const n = audit.known?.events ?? counted!.n;
      const last = audit.known?.lastSeq ?? counted!.last;
      const position = audit.known?.headPosition ?? stored.head();
      if (audit.rows ?? true) for (const d of deletes) d.run(sessionId);
      sessionTails(db).forget(sessionId); // its id may be taken again from sequence 0
      const out: DeletionRecord = {
        sessionId,
        deletedAt: audit.now,
        deletedBy: audit.by,
        reason: audit.reason ?? null,
        events: n,
        lastSeq: last,
        archivedTo: audit.archivedTo ?? null,
      };
      record.run(sessionId, out.deletedAt, out.deletedBy, out.reason, n, last, position, out.archivedTo);
      return out;
    })
    .immediate();
}

/** The deletions recorded, newest first (at most `limit`). */
export function deletionRecords(db: Db, limit = 100): DeletionRecord[] {
  const rows = db
    .prepare('SELECT session_id, deleted_at, deleted_by, reason, events, last_seq, archived_to FROM session_deletion ORDER BY id DESC LIMIT ?')
    .all(limit) as {
    session_id: string;
    deleted_at: number;
    deleted_by: string;
    reason: string | null;
    events: number;
    last_seq: number;
    archived_to: string | null;
  }[];
  return rows.map((r) => ({
    sessionId: r.session_id,
    deletedAt: r.deleted_at,
    deletedBy: r.deleted_by,
    reason: r.reason,
    events: r.events,
    lastSeq: r.last_seq,
    archivedTo: r.archived_to,
  }));
}

/** Sessions deleted at a log head at or past `position`, with the highest such head each (what a projector must not fold again). */
export function deletedSince(db: Db): (position: number) => Map<string, number> {
  const q = db.prepare('SELECT session_id, MAX(head_position) AS head FROM session_deletion WHERE head_position >= ? GROUP BY session_id');
  return (position) => new Map((q.all(position) as { session_id: string; head: number }[]).map((r) => [r.session_id, r.head]));
}

/** Whether this file already recorded the deletion of the session at that log head (a worker applies each NATS deletion once). */
export function hasDeletion(db: Db, sessionId: string, headPosition: number): boolean {
  return db.prepare('SELECT 1 FROM session_deletion WHERE session_id = ? AND head_position = ?').get(sessionId, headPosition) !== undefined;
}

/**
 * The deletions this file records, as the inspector takes them (its `deletions` option): every one,
 * then each new one, read every `everyMs` until closed. A file older than the deletions table has none.
 * One that fails goes to `onError` and is taken again at the next read.
 */
export function sqliteDeletionFeed(db: Db, clock: Clock, onError: (err: unknown) => void = () => undefined, everyMs = 1_000) {
  return (deleted: (sessionId: string, headPosition: number) => Promise<void>) => {
    const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'session_deletion'").get() !== undefined;
    if (!hasTable) return { close: async () => undefined };
    const next = db.prepare('SELECT id, session_id, head_position FROM session_deletion WHERE id > ? ORDER BY id LIMIT 1000');
    let after = 0;
    let closed = false;
    let timer: ReturnType<Clock['setTimeout']> | undefined;
    let running: Promise<void> = Promise.resolve();
    const poll = async () => {
      for (let rows = next.all(after) as Row[]; rows.length > 0 && !closed; rows = next.all(after) as Row[]) {
        for (const r of rows) {
          await deleted(r.session_id, r.head_position);
          after = r.id;
        }
      }
    };
    const tick = () => {
      running = poll()
        .catch(onError) // the deletion not taken is read again at the next tick
        .then(() => {
          if (!closed) timer = clock.setTimeout(tick, everyMs);
        });
    };
    tick();
    return {
      close: async () => {
        closed = true;
        clock.clearTimeout(timer);
        await running;
      },
    };
  };
}

interface Row {
  id: number;
  session_id: string;
  head_position: number;
}
