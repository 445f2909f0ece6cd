/**
 * The deletion port on NATS, as the admin user (nats.conf: only it may purge): refuses a stream or
 * an audit stream the delete could not finish on, then purges the session's subject and snapshot and
 * records the deletion on the audit stream. Why it works: docs/nats.md#deleting-a-session.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import type { Clock } from '../clock.ts';
import { ErrorCode, SessiondError, isSessiondError } from '../errors.ts';
import type { Erasure, SessionEraser } from '../sessions/session-eraser.ts';
import { publishDeletion, verifyAuditStream, type NatsDeletionRecord } from './deletion-stream.ts';
import type { JetStreamEventLog } from './jetstream-event-log.ts';
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

/** The eraser of a NATS log opened by the admin user. */
export function natsEraser(log: JetStreamEventLog, clock: Clock): SessionEraser<NatsDeletionRecord> {
  // a stream that allows purge never denies it later: checked once per eraser (a retention run deletes many)
  let allowed: Promise<void> | undefined;
  return {
    check: () =>
      (allowed ??= checkCanDelete(log).catch((err: unknown) => {
        allowed = undefined;
        throw err;
      })),
    erase: (sessionId, erasure) => purgeSession(log, clock, sessionId, erasure),
  };
}

async function purgeSession(log: JetStreamEventLog, clock: Clock, sessionId: string, { by, reason, archivedTo }: Erasure): Promise<NatsDeletionRecord> {
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
  const record: NatsDeletionRecord = {
    sessionId,
    deletedAt: clock.now(),
    deletedBy: by,
    reason: reason ?? null,
    events: lastSeq,
    lastSeq,
    archivedTo: archivedTo ?? null,
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
