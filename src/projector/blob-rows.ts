/**
 * session_blob: which session references which blob, one row per session and hash, from the events
 * that carry references (src/events/blob-refs.ts). Deleted with the session; a hash no row names is
 * unreferenced (what a delete and the sweep may remove, src/blobs/reclaim.ts).
 */
import { blobRefsOf } from '../events/blob-refs.ts';
import type { SessionEvent } from '../events/envelope.ts';
import type { Db } from '../storage/sqlite/database.ts';

export function blobRows(db: Db) {
  const insert = db.prepare('INSERT INTO session_blob (session_id, sha256, seq) VALUES (?, ?, ?) ON CONFLICT DO NOTHING');
  const clear = db.prepare('DELETE FROM session_blob');
  return {
    /** Records the blobs the event references for its session. */
    record: (e: SessionEvent): void => {
      for (const ref of blobRefsOf(e)) insert.run(e.sessionId, ref.sha256, e.seq);
    },
    clearAll: (): void => void clear.run(),
  };
}

/**
 * The projection's answer to "which blobs are referenced" (the `BlobReferences` a sweep and a delete
 * ask, src/blobs/sweep.ts): as complete as the projection is, so a caller checks it is at the log's head.
 */
export function blobReferences(db: Db) {
  const one = db.prepare('SELECT 1 FROM session_blob WHERE sha256 = ? LIMIT 1').pluck();
  const ofSession = db.prepare('SELECT sha256 FROM session_blob WHERE session_id = ? ORDER BY sha256').pluck();
  const all = db.prepare('SELECT DISTINCT sha256 FROM session_blob').pluck();
  const sessions = db.prepare('SELECT session_id FROM session_blob WHERE sha256 = ? ORDER BY session_id').pluck();
  const reached = db
    .prepare('SELECT 1 FROM session_blob b JOIN session s USING (session_id) WHERE b.sha256 = ? AND (s.owned_by IS NULL OR s.owned_by = ?) LIMIT 1')
    .pluck();
  return {
    referenced: (sha256: string): boolean => one.get(sha256) !== undefined,
    ofSession: (sessionId: string): string[] => ofSession.all(sessionId) as string[],
    all: (): Set<string> => new Set(all.all() as string[]),
    sessionsOf: (sha256: string): string[] => sessions.all(sha256) as string[],
    /** Whether a session `owner` reaches (its own, or one no one owns) references the blob. */
    reachedBy: (sha256: string, owner: string): boolean => reached.get(sha256, owner) !== undefined,
  };
}
