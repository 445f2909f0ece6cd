/**
 * Audits session calls (`ctx.callSession`) from the events alone: child_delivered_twice (safety),
 * child_end_undelivered and child_call_unawaited (liveness, across sessions); each rule's meaning is
 * in docs/api.md (`auditLog`) and docs/operating.md (`sessiond check`).
 */
import type { SessionEvent } from '../events/envelope.ts';
import { isoTime as iso } from '../clock.ts';
import { childTurnEnd } from '../recovery/child-turn.ts';

/** A violation of these rules (a `Violation` of audit-log.ts, which lists them). */
export interface CallViolation {
  sessionId: string;
  rule: 'child_delivered_twice' | 'child_end_undelivered' | 'child_call_unawaited';
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

/** What a parent's log says of its session calls: the child inputs its waits name, and the turns that were cancelled. */
interface CallerLog {
  awaited: Set<string>;
  /** The turn in progress at a time: the turn of the latest execution claimed by then (undefined: none yet). */
  turnAt(time: number): string | undefined;
  cancelled: Set<string>;
}

function callerLog(events: readonly SessionEvent[]): CallerLog {
  const awaited = new Set<string>();
  const continues = new Map<string, string>(); // continuation input -> the execution it continues
  const turnOf = new Map<string, string>(); // execution -> its turn (the input that started it)
  const claims: { time: number; executionId: string }[] = [];
  const cancelled = new Set<string>();
  const turn = (executionId: string) => turnOf.get(executionId) ?? executionId;
  for (const e of events) {
    switch (e.type) {
      case 'wait.started':
        if (e.payload.kind === 'session' && e.payload.child) awaited.add(e.payload.child.inputId);
        break;
      case 'input.admitted':
        if (e.payload.continues) continues.set(e.payload.inputId, e.payload.continues.executionId);
        break;
      case 'execution.claimed':
        claims.push({ time: e.time, executionId: e.payload.executionId });
        break;
      case 'input.promoted': {
        const from = continues.get(e.payload.inputId);
        if (!turnOf.has(e.payload.executionId)) turnOf.set(e.payload.executionId, from === undefined ? e.payload.inputId : turn(from));
        break;
      }
      case 'execution.cancelled':
        cancelled.add(turn(e.payload.executionId));
        break;
      case 'wait.resolved':
        if (e.payload.outcome === 'cancelled') cancelled.add(turn(e.payload.executionId));
        break;
      case 'input.dropped':
        // a dropped continuation: the turn it continued never goes on
        for (const id of e.payload.inputIds) {
          const from = continues.get(id);
          if (from !== undefined) cancelled.add(turn(from));
        }
        break;
    }
  }
  return {
    awaited,
    cancelled,
    turnAt: (time) => {
      const claim = claims.filter((c) => c.time <= time).at(-1);
      return claim === undefined ? undefined : turn(claim.executionId);
    },
  };
}

/** child_call_unawaited: inputs admitted into a child by a parent's session call more than `graceMs` before `now` that no wait of the parent names. */
export function auditUnawaitedChildren(groups: readonly (readonly SessionEvent[])[], now: number, graceMs: number): CallViolation[] {
  const bySession = new Map(groups.filter((g) => g.length > 0).map((g) => [g[0]!.sessionId, g]));
  const callers = new Map<string, CallerLog>();
  const out: CallViolation[] = [];
  for (const [sessionId, events] of bySession) {
    for (const e of events) {
      if (e.type !== 'input.admitted' || e.payload.caller === undefined || now - e.time <= graceMs) continue;
      const parentId = e.payload.caller;
      const parent = bySession.get(parentId);
      if (!parent) continue; // the parent was deleted
      let log = callers.get(parentId);
      if (!log) callers.set(parentId, (log = callerLog(parent)));
      if (log.awaited.has(e.payload.inputId)) continue;
      const turn = log.turnAt(e.time);
      if (turn !== undefined && log.cancelled.has(turn)) continue; // cancelled before its wait was recorded
      out.push({
        sessionId,
        rule: 'child_call_unawaited',
        seqs: [e.seq],
        message: `session ${sessionId}: input ${e.payload.inputId}, admitted at seq ${e.seq} (${iso(e.time)}) by a session call of ${parentId}, is named by no wait of ${parentId}: its answer never reaches it (a recovered turn that called again instead of awaiting it runs the prompt twice)`,
      });
    }
  }
  return out;
}
