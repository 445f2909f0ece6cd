/**
 * Writes already-committed events (from an export or another log) into a SQLite `event` table,
 * keeping their ids, sequences and times. Each session's events must continue its sequence without
 * gaps; a batch is one transaction (a savepoint inside a caller's transaction). This is replay's fast
 * path: no decisions, no OCC round trips.
 */
import { ErrorCode, SessiondError } from '../../errors.ts';
import { pack } from '../../events/codec.ts';
import type { SessionEvent } from '../../events/envelope.ts';
import type { Db } from './database.ts';
import { sessionTails } from './session-tails.ts';

/** Returns `importEvents(events)`: the events as committed, each with the log position it got. */
export function eventImporter(db: Db) {
  const insert = db.prepare('INSERT INTO event (id, aggregate_id, seq, type, version, time, data, committed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
  const lastSeq = db.prepare('SELECT COALESCE(MAX(seq), 0) FROM event WHERE aggregate_id = ?').pluck();
  const write = db.transaction((events: readonly SessionEvent[]): SessionEvent[] => {
    // read from the table once per session and call, never kept across calls: a call (or the
    // caller's transaction around it) that rolls back must not leave sequences behind
    const last = new Map<string, number>();
    const committed: SessionEvent[] = new Array(events.length);
    for (let i = 0; i < events.length; i++) {
      const e = events[i]!;
      const previous = last.get(e.sessionId) ?? (lastSeq.get(e.sessionId) as number);
      if (e.seq !== previous + 1) {
        throw new SessiondError(
          ErrorCode.SequenceConflict,
          `Cannot import event ${e.id}: session ${e.sessionId} is at sequence ${previous} in the target database, the event has sequence ${e.seq}. Replay into a fresh database, in log order.`,
          { details: { sessionId: e.sessionId, last: previous, seq: e.seq } },
        );
      }
      // the original commit time travels with the event (a replayed log audits like the original)
      const { lastInsertRowid } = insert.run(e.id, e.sessionId, e.seq, e.type, e.version, e.time, pack(e.payload), e.committedAt ?? null);
      committed[i] = {
        id: e.id,
        type: e.type,
        version: e.version,
        sessionId: e.sessionId,
        seq: e.seq,
        time: e.time,
        payload: e.payload,
        position: Number(lastInsertRowid),
        ...(e.committedAt === undefined ? {} : { committedAt: e.committedAt }),
      } as SessionEvent;
      last.set(e.sessionId, e.seq);
    }
    return committed;
  });
  return (events: readonly SessionEvent[]): SessionEvent[] => {
    sessionTails(db).forgetAll(); // a log on this connection reads the sequences imported
    return write.immediate(events);
  };
}
