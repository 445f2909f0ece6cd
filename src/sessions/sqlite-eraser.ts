/**
 * The deletion port on a SQLite file: the session's events, rows, snapshot and inputs go in one
 * transaction with one `session_deletion` row (storage/sqlite/delete-session.ts). With a blob store,
 * the session's blobs that no other session references go too (src/blobs/sweep.ts `reclaimBlobs`:
 * those put within the grace period are left to the sweep). Nothing to check first.
 */
import type { BlobStore } from '../blobs/blob-store.ts';
import { reclaimBlobs } from '../blobs/sweep.ts';
import type { Clock } from '../clock.ts';
import type { EventLog } from '../events/event-log.ts';
import { blobReferences } from '../projector/blob-rows.ts';
import { catchUpProjection } from '../projector/catch-up.ts';
import { deleteSessionData, type DeletionRecord } from '../storage/sqlite/delete-session.ts';
import type { Db } from '../storage/sqlite/database.ts';
import type { SessionEraser } from './session-eraser.ts';

export interface SqliteEraserBlobs {
  store: BlobStore;
  /** The file's log: the projection (which says who references what) is brought to its head first. */
  log: EventLog;
  /** Unreferenced blobs put more recently are left to the sweep (default `DEFAULT_BLOB_GRACE_MS`). */
  graceMs?: number | undefined;
}

export function sqliteEraser(db: Db, clock: Clock, blobs?: SqliteEraserBlobs): SessionEraser<DeletionRecord> {
  return {
    check: async () => {},
    erase: async (sessionId, { by, reason, archivedTo }) => {
      if (!blobs) return deleteSessionData(db, sessionId, { now: clock.now(), by, reason, archivedTo });
      // the cut before the references are read: a fork landing after the read marked its blobs after the cut
      const readAt = clock.now();
      await catchUpProjection(db, blobs.log);
      const references = blobReferences(db);
      const hashes = references.ofSession(sessionId);
      const record = deleteSessionData(db, sessionId, { now: clock.now(), by, reason, archivedTo });
      const reclaimed = await reclaimBlobs({ store: blobs.store, references, hashes, now: readAt, graceMs: blobs.graceMs });
      return { ...record, blobs: { removed: reclaimed.removed.length, shared: reclaimed.shared.length, left: reclaimed.left.length } };
    },
  };
}
