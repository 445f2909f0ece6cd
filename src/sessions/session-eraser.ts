/**
 * The deletion port: what differs between logs when a session is deleted (GDPR erasure, retention).
 * The flow around it (checks, the cancel of a running turn, the cache) is `deleteSession` in
 * delete.ts; a SQLite file's eraser is sqlite-eraser.ts, the NATS admin's nats/nats-eraser.ts.
 */
import type { DeletionRecord } from '../storage/sqlite/delete-session.ts';

/** Who deletes, why, and where the session was archived first (what the record keeps; never the content). */
export interface Erasure {
  by: string;
  reason?: string | undefined;
  archivedTo?: string | undefined;
}

export interface SessionEraser<R extends DeletionRecord = DeletionRecord> {
  /** Refuses a delete this log would not let finish: called before anything is cancelled. */
  check(): Promise<void>;
  /**
   * Erases the session's events and everything derived from them, and records the deletion (who,
   * when, why, how many events). Called once a running turn is cancelled; returns the record.
   */
  erase(sessionId: string, erasure: Erasure): Promise<R>;
}
