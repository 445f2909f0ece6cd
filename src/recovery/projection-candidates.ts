/**
 * Recovery candidates read from the projection (cheap; may lag the log, which is fine: the sweep
 * decides every candidate against the log).
 */
import type { Db } from '../storage/sqlite/database.ts';
import { callerSessions, dueWaits, expiredExecutions, runnableSessions } from '../projector/queries.ts';
import type { RecoveryCandidates } from './sweeper.ts';

export function projectionCandidates(db: Db): RecoveryCandidates {
  const deletedAfter = db.prepare('SELECT id, session_id FROM session_deletion WHERE id > ? ORDER BY id');
  let seen = (db.prepare('SELECT COALESCE(MAX(id), 0) AS id FROM session_deletion').get() as { id: number }).id;
  return {
    deleted: () => {
      const rows = deletedAfter.all(seen) as { id: number; session_id: string }[];
      if (rows.length > 0) seen = rows[rows.length - 1]!.id;
      return rows.map((r) => r.session_id);
    },
    expired: (now) => [...new Set(expiredExecutions(db, now).map((r) => r.session_id))],
    runnable: (now) => runnableSessions(db, now),
    due: (now) => [...new Set(dueWaits(db, now).map((r) => r.session_id))],
    callers: () => callerSessions(db),
  };
}
