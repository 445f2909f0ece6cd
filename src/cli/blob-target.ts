/**
 * The blob store beside a log the CLI opened, and who references what: on a SQLite file its `blob`
 * table and the projection's `session_blob` rows (brought to the log's head); on NATS the Object
 * Store bucket and the events of the whole stream (no projection there). For `sessiond blobs sweep`
 * and `sessiond check`.
 */
import type { BlobStore } from '../blobs/blob-store.ts';
import { sweepBlobs, type BlobReferences, type BlobSweepReport } from '../blobs/sweep.ts';
import { systemClock } from '../clock.ts';
import { blobRefsOf } from '../events/blob-refs.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { JetStreamEventLog } from '../nats/jetstream-event-log.ts';
import { ObjectBlobStore } from '../nats/object-blob-store.ts';
import { sweepProjectedBlobs } from '../sessions/blob-sweep.ts';
import { SqliteBlobStore } from '../storage/sqlite/sqlite-blob-store.ts';
import type { OpenedLog } from './log-options.ts';

/** The blob store beside the opened log, or undefined when it has none (a SQLite file older than blobs). */
export async function blobStoreOf(opened: OpenedLog): Promise<BlobStore | undefined> {
  if (opened.db) {
    const has = opened.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'blob'").get();
    return has ? new SqliteBlobStore(opened.db, systemClock) : undefined;
  }
  if (opened.log instanceof JetStreamEventLog) return ObjectBlobStore.open(opened.log.nc);
  return undefined;
}

/** Blob hash → the sessions (and the first sequence) whose events reference it. */
export function referencesIn(events: readonly SessionEvent[]): Map<string, { sessionId: string; seq: number }[]> {
  const out = new Map<string, { sessionId: string; seq: number }[]>();
  for (const e of events) {
    for (const ref of blobRefsOf(e)) {
      const list = out.get(ref.sha256) ?? [];
      if (!list.some((r) => r.sessionId === e.sessionId)) list.push({ sessionId: e.sessionId, seq: e.seq });
      out.set(ref.sha256, list);
    }
  }
  return out;
}

/** One sweep of the opened log's blobs. */
export async function sweepOpened(opened: OpenedLog, store: BlobStore, options: { graceMs: number; dryRun: boolean }): Promise<BlobSweepReport> {
  const now = systemClock.now();
  if (opened.db) return sweepProjectedBlobs(opened.db, opened.log, store, { now, graceMs: options.graceMs, dryRun: options.dryRun });
  // every event committed before the sweep started is read: a blob one references is kept
  const referenced = referencesIn(await opened.log.readAll());
  const references: BlobReferences = { referenced: (sha256) => referenced.has(sha256) };
  return sweepBlobs({ store, references, now, graceMs: options.graceMs, dryRun: options.dryRun });
}
