/**
 * Deleting a session on NATS: the admin half (cancel, purge the session's subject and snapshot,
 * record the deletion in the audit stream) and every worker's half (`applyDeletion`: drop the rows
 * from its projection). Why it works: docs/nats.md#deleting-a-session.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import type { Clock } from '../clock.ts';
import { ErrorCode, SessiondError, isSessiondError } from '../errors.ts';
import { validateId, type IdSource } from '../ids.ts';
import type { EventLog } from '../events/event-log.ts';
import { CommandHandler } from '../execution/command-handler.ts';
import { cancelBeforeDelete, checkDeleteOptions, type DeleteOptions } from '../sessions/delete.ts';
import { deleteSessionData, hasDeletion } from '../storage/sqlite/delete-session.ts';
import type { Db } from '../storage/sqlite/database.ts';
import { publishDeletion, verifyAuditStream, type NatsDeletionRecord } from './deletion-stream.ts';
import type { JetStreamEventLog } from './jetstream-event-log.ts';
import type { Projector } from '../projector/projector.ts';
import { SNAPSHOT_STREAM, SNAPSHOTS_PREFIX } from './snapshot-store.ts';
import { isStreamNotFound } from './stream.ts';
import { subjects } from './subjects.ts';

const SETUP = 'sessiond setup --nats <url> --nats-user admin';

/** Refuses to start a delete the stream or the audit would not let finish (before anything is cancelled). */
export async function checkCanDelete(log: JetStreamEventLog): Promise<void> {
  const jsm = await jetstreamManager(log.nc);
  const info = await jsm.streams.info(log.stream);
  if (info.config.deny_purge) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Stream ${log.stream} denies purge (it was created by an older sessiond, and nats-server will not lift deny purge on an existing stream), so no session can be deleted from it. Sessions can be deleted from a stream created by this sessiond's \`${SETUP}\` (a new deployment); see docs/operating.md, "Deleting sessions".`,
      { details: { stream: log.stream } },
    );
  }
  try {
    await verifyAuditStream(jsm, log.nc.info?.version);
  } catch (err) {
    if (isSessiondError(err))
      throw new SessiondError(err.code, `${err.message} Deleting over NATS records each deletion there first needs \`${SETUP}\`.`, { cause: err });
    throw err;
  }
}

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
  validateId(sessionId, 'session id');
  const by = checkDeleteOptions(options);
  const handler = new CommandHandler(log, clock, ids);
  await cancelBeforeDelete(handler, sessionId, options);
  const jsm = await jetstreamManager(log.nc);
  const subject = subjects.events(sessionId);
  const tail = await jsm.streams.getMessage(log.stream, { last_by_subj: subject });
  const lastSeq = await log.lastSeq(sessionId);
  // purge up to the stream's last sequence; a message the old owner stored meanwhile (after the
  // cancel, before the purge) is after it and is purged in the next round
  let head = 0;
  let messages = 0;
  for (let round = 0; ; round++) {
    head = (await jsm.streams.info(log.stream)).state.last_seq;
    messages += (await jsm.streams.purge(log.stream, { filter: subject, seq: head + 1 })).purged;
    if (!(await jsm.streams.getMessage(log.stream, { last_by_subj: subject }))) break;
    if (round === 10)
      throw new SessiondError(
        ErrorCode.SequenceConflict,
        `Session ${sessionId} was written again while it was being deleted (10 rounds): stop what writes it (a client admitting prompts?) and delete again.`,
      );
  }
  // the snapshot is a cache of the log: gone with it (no snapshot stream: nothing to remove)
  await jsm.streams.purge(SNAPSHOT_STREAM, { filter: `${SNAPSHOTS_PREFIX}.${sessionId}` }).catch((err: unknown) => {
    if (!isStreamNotFound(err)) throw err;
  });
  handler.forget(sessionId);
  const record: NatsDeletionRecord = {
    sessionId,
    deletedAt: clock.now(),
    deletedBy: by,
    reason: options.reason ?? null,
    events: lastSeq,
    lastSeq,
    archivedTo: options.archivedTo ?? null,
    headPosition: Math.max(head, tail?.seq ?? 0),
    stream: log.stream,
    messages,
  };
  try {
    await publishDeletion(log.nc, record);
  } catch (err) {
    throw new SessiondError(
      ErrorCode.LogClosed,
      `Session ${sessionId} was purged from ${log.stream} but its deletion could not be recorded on the audit stream (${(err as Error).message}); workers keep its rows until it is. Record: ${JSON.stringify(record)}. Run the same delete again once NATS is reachable: it finds no session and fails, so publish the record with \`nats --user admin pub sessiond.audit.deleted '<record>'\`.`,
      { cause: err, details: { sessionId } },
    );
  }
  return record;
}

/**
 * A worker applies a deletion to its projection (once: a deletion already recorded is skipped, so a
 * worker may read the audit stream from the start every time it starts). The session's rows are
 * deleted. When the projector has already folded events of a later session of the same id (admitted
 * after the purge, before this worker read the audit record), those rows were mixed with the purged
 * session's: they are deleted too, and the later session's events up to the checkpoint are folded
 * again, so the projection holds exactly the later session.
 */
export async function applyDeletion(db: Db, log: EventLog, projector: Projector, d: NatsDeletionRecord): Promise<boolean> {
  if (hasDeletion(db, d.sessionId, d.headPosition)) return false;
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
