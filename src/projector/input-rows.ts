/**
 * session_input: every admitted input, promoted exactly once. `wake_pending` = the admission asked
 * for a wake and the input has not been promoted yet; only its promotion clears it (a claim does not:
 * a claim that dies before promoting an input must leave the input findable by the sweep).
 */
import type { Db } from '../storage/sqlite/database.ts';

export interface InputRow {
  id: string;
  session_id: string;
  /** The prompt, or the text form of a prompt of parts (`promptText`). */
  prompt: string;
  /** A prompt of parts as JSON text (null for a string prompt). */
  parts?: string | null;
  delivery: 'steer' | 'queue';
  admitted_seq: number;
  promoted_seq: number | null;
  /** The sequence of the `input.dropped` that dropped it unrun (null otherwise). */
  dropped_seq?: number | null;
  wake_pending: number;
  time_created: number;
  /** A scheduled prompt's time (null: runnable at once). */
  not_before?: number | null;
}

export function inputRows(db: Db) {
  const get = db.prepare('SELECT * FROM session_input WHERE session_id = ? AND id = ?');
  const insert = db.prepare(`INSERT INTO session_input
    (id, session_id, prompt, parts, delivery, admitted_seq, promoted_seq, wake_pending, time_created, not_before)
    VALUES (@id, @session_id, @prompt, @parts, @delivery, @admitted_seq, @promoted_seq, @wake_pending, @time_created, @not_before)
    ON CONFLICT DO NOTHING`);
  const promote = db.prepare(`UPDATE session_input SET promoted_seq = ?, wake_pending = 0
                              WHERE id = ? AND session_id = ? AND promoted_seq IS NULL AND dropped_seq IS NULL RETURNING *`);
  const drop = db.prepare(`UPDATE session_input SET dropped_seq = ?, wake_pending = 0
                           WHERE id = ? AND session_id = ? AND promoted_seq IS NULL AND dropped_seq IS NULL`);
  const clear = db.prepare('DELETE FROM session_input');
  return {
    get: (sessionId: string, id: string) => get.get(sessionId, id) as InputRow | undefined,
    /** Inserts the row unless the session already has an input of that id; returns whether it did. */
    insertNew: (row: InputRow): boolean => insert.run({ parts: null, ...row }).changes > 0,
    /** Marks the input promoted at `seq` unless it already was; returns the promoted row, or undefined when none changed. */
    promote: (id: string, sessionId: string, seq: number) => promote.get(seq, id, sessionId) as InputRow | undefined,
    /** Marks a pending input dropped at `seq`; returns whether it was pending. */
    drop: (id: string, sessionId: string, seq: number): boolean => drop.run(seq, id, sessionId).changes > 0,
    clearAll: (): void => void clear.run(),
  };
}
