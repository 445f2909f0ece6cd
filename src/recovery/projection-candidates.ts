/**
 * Recovery candidates read from the projection (cheap; may lag the log, which is fine: the sweep
 * decides every candidate against the log).
 */
import type { Db } from '../storage/sqlite.ts';
import { dueWaits, expiredExecutions, runnableSessions } from '../projector/queries.ts';
import type { RecoveryCandidates } from './sweeper.ts';

export function projectionCandidates(db: Db): RecoveryCandidates {
  return {
    expired: (now) => [...new Set(expiredExecutions(db, now).map((r) => r.session_id))],
    runnable: (now) => runnableSessions(db, now),
    due: (now) => [...new Set(dueWaits(db, now).map((r) => r.session_id))],
  };
}
