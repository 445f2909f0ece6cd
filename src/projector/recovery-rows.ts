/**
 * session_recovery: one row per recovered execution that admitted a continuation. It keeps the
 * durable wake obligation: `wake_pending` until a claim lands (or the wake is parked), and
 * `wake_attempts` as counted by `recovery.wake_requested` / `recovery.wake_failed`.
 */
import type { Db } from '../storage/sqlite/database.ts';

export interface RecoveryRow {
  session_id: string;
  execution_id: string;
  assistant_message_id: string | null;
  continuation_message_id: string;
  phase: string;
  wake_pending: number;
  wake_attempts: number;
  recovery_error: string | null;
  time_created: number;
}

export function recoveryRows(db: Db) {
  const get = db.prepare('SELECT * FROM session_recovery WHERE execution_id = ?');
  const insert = db.prepare(`INSERT INTO session_recovery
    (session_id, execution_id, assistant_message_id, continuation_message_id, phase, wake_pending, wake_attempts, recovery_error, time_created)
    VALUES (@session_id, @execution_id, @assistant_message_id, @continuation_message_id, @phase, @wake_pending, @wake_attempts, @recovery_error, @time_created)`);
  const attempts = db.prepare('UPDATE session_recovery SET wake_attempts = ? WHERE execution_id = ? AND session_id = ?');
  const delivered = db.prepare('UPDATE session_recovery SET wake_pending = 0 WHERE execution_id = ? AND session_id = ?');
  const failed = db.prepare(`UPDATE session_recovery SET wake_attempts = ?, recovery_error = ?, wake_pending = ?
                             WHERE execution_id = ? AND session_id = ?`);
  const clearWakes = db.prepare('UPDATE session_recovery SET wake_pending = 0 WHERE session_id = ? AND wake_pending <> 0');
  const clear = db.prepare('DELETE FROM session_recovery');
  const changed = (info: { changes: number }) => info.changes > 0;
  return {
    get: (executionId: string) => get.get(executionId) as RecoveryRow | undefined,
    insert: (row: RecoveryRow): void => void insert.run(row),
    setAttempts: (executionId: string, sessionId: string, attempt: number) => changed(attempts.run(attempt, executionId, sessionId)),
    delivered: (executionId: string, sessionId: string) => changed(delivered.run(executionId, sessionId)),
    failed: (executionId: string, sessionId: string, attempt: number, errorJson: string, parked: boolean) =>
      changed(failed.run(attempt, errorJson, parked ? 0 : 1, executionId, sessionId)),
    /** A claim landed on the session: the owed wake is delivered. */
    clearWakes: (sessionId: string): void => void clearWakes.run(sessionId),
    clearAll: (): void => void clear.run(),
  };
}
