/**
 * session_wait: one row per wait a turn recorded (`wait.started`), resolved by `wait.resolved`
 * (`outcome` set). A wait asked again under the same kind and name while open (a turn recovered
 * before it settled, whose continuation asks again) replaces the open row.
 */
import type { Db } from '../storage/sqlite/database.ts';

export interface WaitRow {
  session_id: string;
  execution_id: string;
  kind: string;
  name: string;
  message_id: string | null;
  call_id: string | null;
  tool: string | null;
  until: number | null;
  outcome: string | null;
  time_created: number;
  time_resolved: number | null;
}

export function waitRows(db: Db) {
  const replaceOpen = db.prepare('DELETE FROM session_wait WHERE session_id = ? AND kind = ? AND name = ? AND outcome IS NULL');
  const insert = db.prepare(`INSERT OR REPLACE INTO session_wait
    (session_id, execution_id, kind, name, message_id, call_id, tool, until, outcome, time_created, time_resolved)
    VALUES (@session_id, @execution_id, @kind, @name, @message_id, @call_id, @tool, @until, @outcome, @time_created, @time_resolved)`);
  const resolve = db.prepare(`UPDATE session_wait SET outcome = ?, time_resolved = ?
                              WHERE session_id = ? AND execution_id = ? AND kind = ? AND name = ? AND outcome IS NULL`);
  const clear = db.prepare('DELETE FROM session_wait');
  return {
    start(row: WaitRow): void {
      replaceOpen.run(row.session_id, row.kind, row.name);
      insert.run(row);
    },
    /** Ends an open wait; false when there was none to end. */
    resolve: (sessionId: string, executionId: string, kind: string, name: string, outcome: string, time: number): boolean =>
      resolve.run(outcome, time, sessionId, executionId, kind, name).changes > 0,
    clearAll: (): void => void clear.run(),
  };
}
