/**
 * A SQLite file's stored events as per-event rows, for tests that look at or tamper with what the
 * file holds (a corrupt payload, an unknown type, a missing or moved event). The file keeps events
 * in batch rows (src/storage/sqlite/event-rows.ts); `rewriteEvents` writes the edited events back
 * as batches of one, each at its own position, which every reader reads as it read the batches.
 *
 *   rewriteEvents(db, (rows) => rows.filter((r) => !(r.aggregate_id === 'ses_a' && r.seq === 3)));
 *   rewriteEvents(db, (rows) => rows.map((r) => (r.seq === 4 ? { ...r, version: 9 } : r)));
 */
import type { Db } from '../../src/storage/sqlite/database.ts';
import { batchWriter, type EventRow, storedEvents } from '../../src/storage/sqlite/event-rows.ts';
import { sessionTails } from '../../src/storage/sqlite/session-tails.ts';

/** Every stored event, in position order. */
export const storedEventRows = (db: Db): EventRow[] => storedEvents(db).after(0, -1);

/** The session's stored sequences, in order. */
export const storedSeqs = (db: Db, sessionId: string): number[] =>
  storedEvents(db)
    .session(sessionId, 0, -1)
    .map((r) => r.seq);

/** Replaces the file's events with what `edit` returns from them (positions as the rows give them). */
export function rewriteEvents(db: Db, edit: (rows: EventRow[]) => EventRow[]): void {
  const rows = edit(storedEventRows(db));
  const writeBatch = batchWriter(db);
  db.transaction(() => {
    db.prepare('DELETE FROM event_batch').run();
    for (const r of rows) writeBatch(r.position, r.aggregate_id, r.seq, [[r.id, r.type, r.version, r.time, r.data]], r.committed_at ?? null);
  }).immediate();
  sessionTails(db).forgetAll();
}

/** `rewriteEvents` changing the events `which` picks. */
export const changeEvents = (db: Db, which: (r: EventRow) => boolean, change: Partial<EventRow>): void =>
  rewriteEvents(db, (rows) => rows.map((r) => (which(r) ? { ...r, ...change } : r)));

/** `rewriteEvents` without the events `which` picks. */
export const deleteEvents = (db: Db, which: (r: EventRow) => boolean): void => rewriteEvents(db, (rows) => rows.filter((r) => !which(r)));
