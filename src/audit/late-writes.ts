/**
 * Writes that landed after their lease: decided (`time`) while the lease was live, committed
 * (`committedAt`) after it expired. Fencing accepted them, so they are warnings with their lag, not
 * violations (why: docs/architecture.md#design-notes-late-writes).
 */
import type { SessionEvent } from '../events/envelope.ts';
import { isoTime } from '../clock.ts';
import { bySession, RUNNER_WRITES } from './audit-log.ts';

export interface LateWrite {
  sessionId: string;
  executionId: string;
  seq: number;
  type: string;
  /** When the write was decided, committed, and when the lease it was decided under expired (ms). */
  time: number;
  committedAt: number;
  expiresAt: number;
  /** committedAt - expiresAt. */
  lagMs: number;
  message: string;
}

interface Lease {
  expiresAt: number;
  ended: boolean;
}

export function lateWritesOfSession(events: readonly SessionEvent[]): LateWrite[] {
  const out: LateWrite[] = [];
  const leases = new Map<string, Lease>();
  for (const e of events) {
    const executionId = (e.payload as { executionId?: string }).executionId;
    if (e.type === 'execution.claimed') leases.set(e.payload.executionId, { expiresAt: e.payload.expiresAt, ended: false });
    const lease = executionId === undefined ? undefined : leases.get(executionId);
    if (!lease || lease.ended) continue;
    // decided under a live lease (a write decided after it is a violation: audit-log.ts)
    const live = e.time < lease.expiresAt;
    if (live && RUNNER_WRITES.has(e.type) && e.committedAt !== undefined && e.committedAt > lease.expiresAt) {
      const lagMs = e.committedAt - lease.expiresAt;
      out.push({
        sessionId: e.sessionId,
        executionId: executionId!,
        seq: e.seq,
        type: e.type,
        time: e.time,
        committedAt: e.committedAt,
        expiresAt: lease.expiresAt,
        lagMs,
        message: `session ${e.sessionId}: ${e.type} of execution ${executionId} was decided at ${isoTime(e.time)}, while its lease was live, but committed at ${isoTime(e.committedAt)}, ${lagMs} ms after the lease expired at ${isoTime(lease.expiresAt)} (fencing accepted it: nobody had written to the session since)`,
      });
    }
    if (e.type === 'execution.renewed' && live) lease.expiresAt = e.payload.expiresAt;
    if (['execution.settled', 'execution.cancelled', 'recovery.started'].includes(e.type)) lease.ended = true;
  }
  return out;
}

/** Late writes of a whole log (events of many sessions, each session in order). */
export function lateWrites(events: Iterable<SessionEvent>): LateWrite[] {
  return bySession(events).flatMap(lateWritesOfSession);
}
