/** What `verifyLog` reports, per session and for the whole log. */
import type { LogProblem } from './stored-log.ts';

/**
 * - `undecodable`: a stored event the current catalog and codec cannot decode (upcasters included)
 * - `refused`: the current code refuses the session's events: out of order, a gap, a safety
 *   invariant broken (two live owners, a promotion twice...), the projector rejects an event
 * - `decides_differently`: the current fold contradicts what the code that wrote the log stored
 *   (its session snapshot), or the fold and the machine disagree
 * - `projection_differs`: the stored projection rows of the session differ from what the current
 *   projector folds from the log (SQLite files)
 */
export type ProblemKind = 'undecodable' | 'refused' | 'decides_differently' | 'projection_differs';

export interface Problem {
  kind: ProblemKind;
  /** The first sequence of the session where it goes wrong (0: before any event). */
  seq: number;
  reason: string;
}

export interface SessionProblems {
  sessionId: string;
  /** Events of the session in the log. */
  events: number;
  /** In sequence order; the first is where the session first reads differently. */
  problems: Problem[];
}

export interface VerifyReport {
  /** The log verified (a file, a NATS server and stream). */
  source: string;
  sessions: number;
  events: number;
  /** Sessions with at least one problem, by session id. */
  differing: SessionProblems[];
  /** Problems of the log itself (a damaged file, an upgrade that fails). */
  log: LogProblem[];
  /** How it was read: read-only in place or a migrated copy, what was compared, what could not be. */
  notes: string[];
  /** True when nothing differs: the exit code is 0. */
  ok: boolean;
}

export const KINDS: readonly ProblemKind[] = ['undecodable', 'refused', 'decides_differently', 'projection_differs'];

/** Problems in sequence order, each (kind, seq, reason) once. */
export function sortProblems(problems: Problem[]): Problem[] {
  const seen = new Set<string>();
  return problems
    .filter((p) => {
      const key = `${p.kind}\u0000${p.seq}\u0000${p.reason}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .sort((a, b) => a.seq - b.seq || KINDS.indexOf(a.kind) - KINDS.indexOf(b.kind));
}
