/**
 * session_execution: the executions that may still be live or need recovery. A claim inserts a
 * row; settlement, cancellation and completed recovery delete it (its history stays in the log).
 * Every write is addressed by (id, session_id) and returns whether a row changed.
 */
import type { Db } from '../storage/sqlite/database.ts';

export interface ExecutionRow {
  id: string;
  session_id: string;
  owner_id: string;
  assistant_message_id: string | null;
  phase: string;
  assistant_seq: number;
  time_created: number;
  expires_at: number;
  recovery_error: string | null;
}

export function executionRows(db: Db) {
  const get = db.prepare('SELECT * FROM session_execution WHERE id = ?');
  const insert = db.prepare(`INSERT INTO session_execution
    (id, session_id, owner_id, assistant_message_id, phase, assistant_seq, time_created, expires_at, recovery_error)
    VALUES (@id, @session_id, @owner_id, @assistant_message_id, @phase, @assistant_seq, @time_created, @expires_at, @recovery_error)
    ON CONFLICT DO NOTHING`);
  const expires = db.prepare('UPDATE session_execution SET expires_at = ? WHERE id = ? AND session_id = ?');
  const phase = db.prepare('UPDATE session_execution SET phase = ? WHERE id = ? AND session_id = ?');
  const assistant = db.prepare('UPDATE session_execution SET assistant_message_id = ? WHERE id = ? AND session_id = ?');
  const recoveryError = db.prepare('UPDATE session_execution SET recovery_error = ? WHERE id = ? AND session_id = ?');
  const remove = db.prepare('DELETE FROM session_execution WHERE id = ? AND session_id = ?');
  const clear = db.prepare('DELETE FROM session_execution');
  const changed = (info: { changes: number }) => info.changes > 0;
  return {
    get: (id: string) => get.get(id) as ExecutionRow | undefined,
    /** Inserts the row unless an execution of that id has one; returns whether it did. */
    insertNew: (row: ExecutionRow): boolean => insert.run(row).changes > 0,
    setExpiresAt: (id: string, sessionId: string, expiresAt: number) => changed(expires.run(expiresAt, id, sessionId)),
    setPhase: (id: string, sessionId: string, value: string) => changed(phase.run(value, id, sessionId)),
    setAssistantMessage: (id: string, sessionId: string, messageId: string) => changed(assistant.run(messageId, id, sessionId)),
    /** Where the row still exists; returns whether it did. */
    setRecoveryError: (id: string, sessionId: string, json: string) => changed(recoveryError.run(json, id, sessionId)),
    delete: (id: string, sessionId: string) => changed(remove.run(id, sessionId)),
    clearAll: (): void => void clear.run(),
  };
}
