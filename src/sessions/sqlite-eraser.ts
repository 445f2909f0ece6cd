/**
 * The deletion port on a SQLite file: the session's events, rows, snapshot and inputs go in one
 * transaction with one `session_deletion` row (storage/sqlite/delete-session.ts). Nothing to check first.
 */
import type { Clock } from '../clock.ts';
import { deleteSessionData, type DeletionRecord } from '../storage/sqlite/delete-session.ts';
import type { Db } from '../storage/sqlite/database.ts';
import type { SessionEraser } from './session-eraser.ts';

export function sqliteEraser(db: Db, clock: Clock): SessionEraser<DeletionRecord> {
  return {
    check: async () => {},
    erase: async (sessionId, { by, reason, archivedTo }) => deleteSessionData(db, sessionId, { now: clock.now(), by, reason, archivedTo }),
  };
}
