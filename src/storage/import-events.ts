/**
 * Writes already-committed events (from an export or another log) into a SQLite `event` table,
 * keeping their ids, sequences and times. Each session's events must continue its sequence without
 * gaps; a batch is one transaction. This is replay's fast path: no decisions, no OCC round trips.
 */
import { ErrorCode, SessiondError } from '../errors.ts';
import { pack } from '../events/codec.ts';
import type { SessionEvent } from '../events/envelope.ts';
import type { Db } from './sqlite.ts';

export function eventImporter(db: Db) {
  const insert = db.prepare('INSERT INTO event (id, aggregate_id, seq, type, version, time, data) VALUES (?, ?, ?, ?, ?, ?, ?)');
  const lastSeq = db.prepare('SELECT COALESCE(MAX(seq), 0) FROM event WHERE aggregate_id = ?').pluck();
  const known = new Map<string, number>();
  const write = db.transaction((events: SessionEvent[]) => {
    for (const e of events) {
      const last = known.get(e.sessionId) ?? (lastSeq.get(e.sessionId) as number);
      if (e.seq !== last + 1) {
        throw new SessiondError(ErrorCode.SequenceConflict,
          `Cannot import event ${e.id}: session ${e.sessionId} is at sequence ${last} in the target database, the event has sequence ${e.seq}. Replay into a fresh database, in log order.`,
          { details: { sessionId: e.sessionId, last, seq: e.seq } });
      }
      insert.run(e.id, e.sessionId, e.seq, e.type, e.version, e.time, pack(e.payload));
      known.set(e.sessionId, e.seq);
    }
  });
  return (events: SessionEvent[]): void => write.immediate(events);
}
