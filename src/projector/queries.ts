/**
 * Read queries over the projection, for the rest of the engine: the recovery sweep (expired
 * executions, owed wakes), status and the inspector (a session's rows, the list of sessions).
 * The projection may lag the log: use these to find candidates, and let the log decide.
 */
import type { Db } from '../storage/sqlite/database.ts';
import type { ExecutionRow } from './execution-rows.ts';
import type { InputRow } from './input-rows.ts';
import type { MessageRow } from './message-rows.ts';
import type { RecoveryRow } from './recovery-rows.ts';

export interface SessionRows {
  sessionId: string;
  /** Executions that may still be live or need recovery, oldest first. */
  executions: ExecutionRow[];
  /** Every admitted input, in admission order. */
  inputs: InputRow[];
  /** Messages in sequence order (`data` is JSON text: see `parseMessage`). */
  messages: MessageRow[];
  /** Recovered executions that admitted a continuation, oldest first. */
  recoveries: RecoveryRow[];
}

export interface SessionSummary {
  sessionId: string;
  /** Rows in session_execution (live, or expired and awaiting recovery). */
  executions: number;
  /** Inputs admitted and not yet promoted. */
  pendingInputs: number;
  messages: number;
  /** Recoveries that still owe a wake. */
  owedWakes: number;
  /** Latest time on any of the session's rows. */
  lastActivity: number;
}

const cache = new WeakMap<Db, ReturnType<typeof prepare>>();

function prepare(db: Db) {
  return {
    pendingWakes: db
      .prepare(`SELECT session_id FROM session_input WHERE wake_pending = 1 AND promoted_seq IS NULL AND dropped_seq IS NULL
                              UNION SELECT session_id FROM session_recovery WHERE wake_pending = 1
                              ORDER BY session_id`)
      .pluck(),
    runnable: db
      .prepare(`SELECT session_id FROM session_input WHERE promoted_seq IS NULL AND dropped_seq IS NULL AND (not_before IS NULL OR not_before <= ?)
                          UNION SELECT session_id FROM session_recovery WHERE wake_pending = 1
                          ORDER BY session_id`)
      .pluck(),
    expired: db.prepare('SELECT * FROM session_execution WHERE expires_at <= ? ORDER BY expires_at, id'),
    callers: db.prepare(`SELECT DISTINCT session_id FROM session_wait WHERE outcome IS NULL AND kind = 'session' ORDER BY session_id`).pluck(),
    dueWaits: db.prepare(`SELECT session_id, execution_id, kind, name, until FROM session_wait
                          WHERE outcome IS NULL AND until IS NOT NULL AND until <= ? ORDER BY until, session_id`),
    executions: db.prepare('SELECT * FROM session_execution WHERE session_id = ? ORDER BY time_created, id'),
    inputs: db.prepare('SELECT * FROM session_input WHERE session_id = ? ORDER BY admitted_seq, id'),
    messages: db.prepare('SELECT * FROM session_message WHERE session_id = ? ORDER BY seq, id'),
    recoveries: db.prepare('SELECT * FROM session_recovery WHERE session_id = ? ORDER BY time_created, execution_id'),
    sessions: db.prepare(`
      SELECT session_id AS sessionId,
             SUM(kind = 'e') AS executions, SUM(kind = 'p') AS pendingInputs, SUM(kind = 'm') AS messages,
             SUM(kind = 'w') AS owedWakes, MAX(t) AS lastActivity
      FROM (
        SELECT session_id, 'e' AS kind, time_created AS t FROM session_execution
        UNION ALL SELECT session_id, CASE WHEN promoted_seq IS NULL AND dropped_seq IS NULL THEN 'p' ELSE 'i' END, time_created FROM session_input
        UNION ALL SELECT session_id, 'm', time_updated FROM session_message
        UNION ALL SELECT session_id, CASE WHEN wake_pending = 1 THEN 'w' ELSE 'r' END, time_created FROM session_recovery
      )
      GROUP BY session_id ORDER BY session_id`),
  };
}

function statements(db: Db) {
  let s = cache.get(db);
  if (!s) cache.set(db, (s = prepare(db)));
  return s;
}

/** Session ids owed a wake: an admission asked for one and is not promoted, or a recovery's wake has not landed. */
export function pendingWakes(db: Db): string[] {
  return statements(db).pendingWakes.all() as string[];
}

/**
 * Sessions that may have work to run: an input admitted and not promoted (whatever its wake flag
 * says: projections written before version 5 cleared it on a claim), or a recovery's wake owed. The
 * sweep decides each against the log; one with a live owner, or only `wake: false` inputs, is left.
 */
export function runnableSessions(db: Db, now: number): string[] {
  return statements(db).runnable.all(now) as string[];
}

/** Sessions whose turn waits on another session's (an open session call): the sweep delivers a child's end. */
export function callerSessions(db: Db): string[] {
  return statements(db).callers.all() as string[];
}

/** Sessions with a wait due at `now`: a timer whose time came, a signal whose timeout passed (open, `until <= now`). */
export function dueWaits(db: Db, now: number): { session_id: string; execution_id: string; kind: string; name: string; until: number }[] {
  return statements(db).dueWaits.all(now) as { session_id: string; execution_id: string; kind: string; name: string; until: number }[];
}

/** Executions whose lease has expired at `now` (expires_at <= now) and that were not settled, cancelled or recovered. */
export function expiredExecutions(db: Db, now: number): ExecutionRow[] {
  return statements(db).expired.all(now) as ExecutionRow[];
}

/** Every projected row of one session, for status and the inspector. */
export function sessionRows(db: Db, sessionId: string): SessionRows {
  const s = statements(db);
  return {
    sessionId,
    executions: s.executions.all(sessionId) as ExecutionRow[],
    inputs: s.inputs.all(sessionId) as InputRow[],
    messages: s.messages.all(sessionId) as MessageRow[],
    recoveries: s.recoveries.all(sessionId) as RecoveryRow[],
  };
}

/** Every session the projection knows, by id, with counts. */
export function listSessions(db: Db): SessionSummary[] {
  return statements(db).sessions.all() as SessionSummary[];
}
