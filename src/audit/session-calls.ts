/**
 * Audits session calls (`ctx.callSession`) from the events alone:
 * - child_delivered_twice (safety, the parent's log): a child's end delivered to its parent more
 *   than once (two `wait.resolved` delivered for waits on the same child input);
 * - child_end_undelivered (liveness, across sessions): a parent still waits on a child whose turn
 *   ended longer than the grace ago (no sweep delivered it).
 */
import type { SessionEvent } from '../events/envelope.ts';
import { isoTime as iso } from '../clock.ts';
import { childTurnEnd } from '../recovery/child-turn.ts';

/** A violation of these rules (a `Violation` of audit-log.ts, which lists them). */
export interface CallViolation {
  sessionId: string;
  rule: 'child_delivered_twice' | 'child_end_undelivered';
  seqs: number[];
  message: string;
}

interface CallWait {
  seq: number;
  name: string;
  executionId: string;
  child: { sessionId: string; inputId: string };
}

/** The session waits a session's log opened, and those of them still open at its end. */
function sessionWaits(events: readonly SessionEvent[]): { opened: Map<string, CallWait>; open: CallWait[]; delivered: Map<string, number[]> } {
  const opened = new Map<string, CallWait>(); // by execution and name
  const open = new Map<string, CallWait>();
  const delivered = new Map<string, number[]>(); // child input id -> seqs of its deliveries
  for (const e of events) {
    if (e.type === 'wait.started' && e.payload.kind === 'session' && e.payload.child) {
      const key = `${e.payload.executionId}\n${e.payload.name}`;
      const w = { seq: e.seq, name: e.payload.name, executionId: e.payload.executionId, child: e.payload.child };
      opened.set(key, w);
      open.set(key, w);
    } else if (e.type === 'wait.resolved' && e.payload.kind === 'session') {
      const key = `${e.payload.executionId}\n${e.payload.name}`;
      const w = opened.get(key);
      open.delete(key);
      if (w && e.payload.outcome === 'delivered') delivered.set(w.child.inputId, [...(delivered.get(w.child.inputId) ?? []), e.seq]);
    } else if (e.type === 'execution.settled' && (e.payload.outcome === 'succeeded' || e.payload.outcome === 'failed')) {
      open.clear(); // the turn is over: its waits with it
    }
  }
  return { opened, open: [...open.values()], delivered };
}

/** child_delivered_twice, in one session's log. */
export function auditChildDeliveries(events: readonly SessionEvent[]): CallViolation[] {
  if (events.length === 0) return [];
  const sessionId = events[0]!.sessionId;
  const out: CallViolation[] = [];
  for (const [inputId, seqs] of sessionWaits(events).delivered)
    if (seqs.length > 1)
      out.push({
        sessionId,
        rule: 'child_delivered_twice',
        seqs,
        message: `session ${sessionId}: the end of its call's child input ${inputId} was delivered ${seqs.length} times (a child's result is delivered once)`,
      });
  return out;
}

/** child_end_undelivered: parents still waiting on a child whose turn ended more than `graceMs` before `now`. */
export function auditUndeliveredChildren(groups: readonly (readonly SessionEvent[])[], now: number, graceMs: number): CallViolation[] {
  const bySession = new Map(groups.filter((g) => g.length > 0).map((g) => [g[0]!.sessionId, g]));
  const out: CallViolation[] = [];
  for (const [sessionId, events] of bySession) {
    for (const w of sessionWaits(events).open) {
      const child = bySession.get(w.child.sessionId) ?? [];
      const end = childTurnEnd(child, w.child.inputId);
      if (!end) continue;
      const endEvent = [...child]
        .reverse()
        .find(
          (e) =>
            (e.type === 'execution.settled' || e.type === 'execution.cancelled' || e.type === 'wait.resolved') &&
            (e.payload as { executionId?: string }).executionId === end.executionId,
        );
      const at = endEvent?.time ?? 0;
      if (now - at <= graceMs) continue;
      out.push({
        sessionId,
        rule: 'child_end_undelivered',
        seqs: [w.seq],
        message: `session ${sessionId}: its session call ${w.name} still waits on ${w.child.sessionId}, whose turn ended ${end.outcome} at ${iso(at)} (seq ${endEvent?.seq ?? '?'} there), more than ${graceMs / 1000} s ago: no sweep delivered it (is a worker running?)`,
      });
    }
  }
  return out;
}
