/**
 * The blob sweep over a projection: brings the projection (who references which blob, the
 * `session_blob` rows) to the log's head, then sweeps the store (src/blobs/sweep.ts). What the
 * worker runs every `DEFAULT_BLOB_SWEEP_INTERVAL_MS`, `sessiond blobs sweep` on demand and
 * `sessiond check` as a dry run. Works on any log whose projection is in `db` (SQLite, or a NATS
 * worker's file) and any blob store.
 */
import type { BlobStore } from '../blobs/blob-store.ts';
import { sweepBlobs, type BlobSweepReport } from '../blobs/sweep.ts';
import type { EventLog } from '../events/event-log.ts';
import { blobReferences } from '../projector/blob-rows.ts';
import { catchUpProjection } from '../projector/catch-up.ts';
import type { Db } from '../storage/sqlite/database.ts';

export interface ProjectedSweepOptions {
  now: number;
  graceMs?: number | undefined;
  dryRun?: boolean;
}

export async function sweepProjectedBlobs(db: Db, log: EventLog, store: BlobStore, options: ProjectedSweepOptions): Promise<BlobSweepReport> {
  // every event committed before the sweep started is in the projection: a blob it references is kept
  await catchUpProjection(db, log);
  const references = blobReferences(db);
  return sweepBlobs({ store, references, now: options.now, graceMs: options.graceMs, ...(options.dryRun ? { dryRun: true } : {}) });
}

/** Referenced blobs the store does not hold (what `sessiond check` reports as missing), with the sessions naming each. */
export async function missingBlobs(db: Db, log: EventLog, store: BlobStore): Promise<{ sha256: string; sessions: string[] }[]> {
  await catchUpProjection(db, log);
  const references = blobReferences(db);
  const missing: { sha256: string; sessions: string[] }[] = [];
  for (const sha256 of [...references.all()].sort()) if (!(await store.has(sha256))) missing.push({ sha256, sessions: references.sessionsOf(sha256) });
  return missing;
}
