/**
 * Deleting a session on NATS: the admin half (`deleteNatsSession`: the shared delete flow of
 * sessions/delete.ts with the NATS eraser of nats-eraser.ts: cancel, purge the session's subject and
 * snapshot, record the deletion in the audit stream) and every worker's half (`applyDeletion`: drop
 * the rows from its projection). Why it works: docs/nats.md#deleting-a-session.
 */
import type { Clock } from '../clock.ts';
import { ErrorCode, SessiondError } from '../errors.ts';
import type { IdSource } from '../ids.ts';
import type { EventLog } from '../events/event-log.ts';
import { CommandHandler } from '../execution/command-handler.ts';
import { deleteSession, type DeleteOptions } from '../sessions/delete.ts';
import { deleteSessionData, hasDeletion } from '../storage/sqlite/delete-session.ts';
import type { Db } from '../storage/sqlite/database.ts';
import type { NatsDeletionRecord } from './deletion-stream.ts';
import type { JetStreamEventLog } from './jetstream-event-log.ts';
import { natsEraser } from './nats-eraser.ts';
import type { Projector } from '../projector/projector.ts';
import type { BlobStore } from '../blobs/blob-store.ts';
import { reclaimBlobs } from '../blobs/sweep.ts';
import { blobReferences } from '../projector/blob-rows.ts';
import { catchUpProjection } from '../projector/catch-up.ts';

export { checkCanDelete, natsEraser } from './nats-eraser.ts';

/**
 * Deletes the session from the NATS log as the admin user and records it on the audit stream.
 * Returns the record. The log must be opened by the admin (nats.conf: only it may purge).
 */
export async function deleteNatsSession(
  log: JetStreamEventLog,
  clock: Clock,
  ids: IdSource,
  sessionId: string,
  options: DeleteOptions = {},
): Promise<NatsDeletionRecord> {
  return deleteSession(new CommandHandler(log, clock, ids), natsEraser(log, clock), sessionId, options);
}

/**
 * A worker applies a deletion to its projection (once: a deletion already recorded is skipped, so a
 * worker may read the audit stream from the start every time it starts). The session's rows are
 * deleted. When the projector has already folded events of a later session of the same id (admitted
 * after the purge, before this worker read the audit record), those rows were mixed with the purged
 * session's: they are deleted too, and the later session's events up to the checkpoint are folded
 * again, so the projection holds exactly the later session. With `blobs`, the deleted session's
 * blobs no other session references are removed from the store (src/blobs/sweep.ts `reclaimBlobs`).
 */
export async function applyDeletion(db: Db, log: EventLog, projector: Projector, d: NatsDeletionRecord, blobs?: DeletionBlobs): Promise<boolean> {
  if (hasDeletion(db, d.sessionId, d.headPosition)) return false;
  // the removal's cut is taken before the references are read: a fork appended after that read
  // marked the blobs it copies after the cut, so the removal keeps them
  const readAt = blobs?.clock.now() ?? 0;
  // the session's blobs, read before its rows go (those of events this worker never folded are the sweep's)
  const hashes = blobs ? blobReferences(db).ofSession(d.sessionId) : [];
  const applied = await applyRows(db, log, projector, d);
  if (applied && blobs && hashes.length > 0) {
    // the objects only the deleted session referenced: every event before now is folded first (a
    // fork or a later session of the id keeps its blobs); one put within the grace period stays
    await catchUpProjection(db, log);
    await reclaimBlobs({ store: blobs.store, references: blobReferences(db), hashes, now: readAt, graceMs: blobs.graceMs });
  }
  return applied;
}

/** Where a worker's deletions remove the deleted session's blobs (its Object Store bucket). */
export interface DeletionBlobs {
  store: BlobStore;
  clock: Clock;
  graceMs?: number | undefined;
}

async function applyRows(db: Db, log: EventLog, projector: Projector, d: NatsDeletionRecord): Promise<boolean> {
  for (let round = 0; ; round++) {
    const head = await log.head();
    // the session now in the log began after the purge; only its events are left in the stream
    const later = await log.readSession(d.sessionId);
    const applied = db
      .transaction((): boolean | undefined => {
        const at = projector.checkpoint();
        // the projector went past what was read: the later session may have grown in between; read again
        if (at > head) {
          if (round < 20) return undefined;
          throw new SessiondError(
            ErrorCode.SequenceConflict,
            `Could not apply the deletion of ${d.sessionId}: this worker's projector moved on each of 20 times its events were read. It is applied again when the worker restarts.`,
            { details: { sessionId: d.sessionId } },
          );
        }
        deleteSessionData(db, d.sessionId, {
          now: d.deletedAt,
          by: d.deletedBy,
          reason: d.reason ?? undefined,
          archivedTo: d.archivedTo ?? undefined,
          known: { events: d.events, lastSeq: d.lastSeq, headPosition: d.headPosition },
        });
        projector.refold(later.filter((e) => e.position! > d.headPosition && e.position! <= at));
        return true;
      })
      .immediate();
    if (applied !== undefined) return applied;
  }
}
