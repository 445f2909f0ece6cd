/**
 * The projected rows of a session as they were at some sequence, for time travel: the session's
 * events up to that sequence are applied by the real Projector into a fresh in-memory database,
 * then read back with `sessionRows`. Nothing is guessed: it is the projection of that prefix.
 */
import type { Clock } from '../clock.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { Projector, sessionRows, type SessionRows } from '../projector/index.ts';
import { migrate } from '../storage/migrate.ts';
import { openDatabase } from '../storage/sqlite.ts';

/** Rows of one session folded from `events` (a prefix of its log); any JSON-able value. */
export type RowsAt = (sessionId: string, events: readonly SessionEvent[]) => unknown | Promise<unknown>;

/** `RowsAt` through the projector. Each event gets its sequence as position (one session, in order). */
export function projectedRowsAt(options: { clock?: Clock } = {}): (sessionId: string, events: readonly SessionEvent[]) => SessionRows {
  return (sessionId, events) => {
    const db = openDatabase(':memory:');
    try {
      migrate(db, options.clock ? { clock: options.clock } : {});
      new Projector(db, { name: 'inspector' }).apply(events.map((e) => ({ ...e, position: e.seq })));
      return sessionRows(db, sessionId);
    } finally {
      db.close();
    }
  };
}
