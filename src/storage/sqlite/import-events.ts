/**
 * Writes already-committed events (from an export or another log) into a SQLite log, keeping their
 * ids, sequences, times and commit times. Each session's events must continue its sequence without
 * gaps; a run of one session's events in the input is stored as one batch row (event-rows.ts). A
 * call is one transaction (a savepoint inside a caller's transaction). This is replay's fast path:
 * no decisions, no OCC round trips.
 */
import { ErrorCode, SessiondError } from '../../errors.ts';
import { pack } from '../../events/codec.ts';
import type { SessionEvent } from '../../events/envelope.ts';
import type { Db } from './database.ts';
import { batchWriter, type Frame, highPositionReader, isUniqueViolation } from './event-rows.ts';
import { sessionTails } from './session-tails.ts';

/** Most events one imported batch row holds. */
const MAX_RUN = 256;

/** Returns `importEvents(events)`: the events as committed, each with the log position it got. */
export function eventImporter(db: Db) {
  const writeBatch = batchWriter(db);
  const lastSeq = db.prepare('SELECT COALESCE(MAX(last_seq), 0) FROM event_batch WHERE aggregate_id = ?').pluck();
  const high = highPositionReader(db);
  const write = db.transaction((events: readonly SessionEvent[]): SessionEvent[] => {
    // read from the table once per session and call, never kept across calls: a call (or the
    // caller's transaction around it) that rolls back must not leave sequences behind
    const last = new Map<string, number>();
    let position = high();
    const committed: SessionEvent[] = new Array(events.length);
    for (let start = 0; start < events.length; ) {
      const head = events[start]!;
      // a run: the session's next events, committed at the same time (the commit time is the row's)
      let end = start + 1;
      while (end < events.length && end - start < MAX_RUN && events[end]!.sessionId === head.sessionId && events[end]!.committedAt === head.committedAt) end++;
      const frames: Frame[] = [];
      for (let i = start; i < end; i++) {
        const e = events[i]!;
        const previous = last.get(e.sessionId) ?? (lastSeq.get(e.sessionId) as number);
        if (e.seq !== previous + 1) {
          throw new SessiondError(
            ErrorCode.SequenceConflict,
            `Cannot import event ${e.id}: session ${e.sessionId} is at sequence ${previous} in the target database, the event has sequence ${e.seq}. Replay into a fresh database, in log order.`,
            { details: { sessionId: e.sessionId, last: previous, seq: e.seq } },
          );
        }
        last.set(e.sessionId, e.seq);
        frames.push([e.id, e.type, e.version, e.time, pack(e.payload)]);
        position++;
        committed[i] = {
          id: e.id,
          type: e.type,
          version: e.version,
          sessionId: e.sessionId,
          seq: e.seq,
          time: e.time,
          payload: e.payload,
          position,
          ...(e.committedAt === undefined ? {} : { committedAt: e.committedAt }),
        } as SessionEvent;
      }
      // the original commit time travels with the events (a replayed log audits like the original)
      try {
        writeBatch(position, head.sessionId, events[end - 1]!.seq, frames, head.committedAt ?? null);
      } catch (err) {
        if (isUniqueViolation(err)) throw reusedIdError(head);
        throw err;
      }
      start = end;
    }
    return committed;
  });
  return (events: readonly SessionEvent[]): SessionEvent[] => {
    sessionTails(db).forgetAll(); // a log on this connection reads the sequences imported
    return write.immediate(events);
  };
}

/** The run starting at `head` begins with an id the file holds already (the first of an earlier append). */
const reusedIdError = (head: SessionEvent) =>
  new SessiondError(
    ErrorCode.DuplicateEvent,
    `Cannot import event ${head.id} (session ${head.sessionId}, sequence ${head.seq}): the target database already holds an event with this id. Event ids are unique in a log; replay into a fresh database, and check the source for an id used twice.`,
    { details: { sessionId: head.sessionId, seq: head.seq, id: head.id } },
  );
