/**
 * Where a session may be forked: at a settled point, a sequence after which nothing runs or waits
 * (no execution in progress, no open wait, no continuation of an interrupted turn owed). Pure.
 */
import { ErrorCode, SessiondError } from '../errors.ts';
import type { SessionSnapshot } from '../machines/decider.ts';
import { openWaits } from '../machines/session-context.ts';

/** Is the session, as this snapshot folds it, between turns? */
export function isSettledPoint(s: SessionSnapshot): boolean {
  const c = s.context;
  if (s.value !== 'idle' && s.value !== 'settled') return false;
  if (c.execution !== null && c.execution.outcome === null) return false;
  if (openWaits(c).length > 0) return false;
  if (c.recovery?.wakePending) return false;
  return !c.pending.some((p) => p.source === 'recovery');
}

/**
 * The sequence to fork at: `at` when it is a settled point, the last settled point when `at` is
 * absent. `settled` lists the settled points in order; `head` is the source's last sequence.
 * Throws `not_settled` naming the nearest settled points around `at`, `invalid_option` past the head.
 */
export function forkSeq(sourceId: string, settled: readonly number[], head: number, at?: number): number {
  if (at !== undefined && (!Number.isSafeInteger(at) || at < 1 || at > head)) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Invalid fork point ${String(at)}: session ${sourceId} has ${head} events; fork at a sequence from 1 to ${head}.`,
      {
        details: { sessionId: sourceId, head },
      },
    );
  }
  const target = at ?? head;
  let before: number | undefined;
  let after: number | undefined;
  for (const seq of settled) {
    if (seq <= target) before = seq;
    else {
      after = seq;
      break;
    }
  }
  if (at === undefined) {
    if (before !== undefined) return before;
  } else if (before === at) return at;
  const nearest = [before, after].filter((x): x is number => x !== undefined);
  const where = at === undefined ? `session ${sourceId} has no settled point yet` : `sequence ${at} of session ${sourceId} is inside a turn`;
  throw new SessiondError(
    ErrorCode.NotSettled,
    `Cannot fork: ${where}. ${nearest.length > 0 ? `Fork at ${nearest.join(' or ')}, the nearest settled ${nearest.length > 1 ? 'sequences' : 'sequence'} (between turns).` : 'Wait for its turn to settle.'}`,
    { details: { sessionId: sourceId, at: at ?? null, nearestBefore: before ?? null, nearestAfter: after ?? null } },
  );
}
