/**
 * Audits a log against the engine's invariants, from the events alone (no trust in the machine
 * that wrote them): at no instant two live owners, each input promoted at most once (and only after
 * admission), cancellation final, nothing written by an execution after its lease expired, each
 * execution recovered at most once. Returns every violation with the sequences involved.
 */
import type { SessionEvent } from '../events/envelope.ts';
import { isoTime } from '../clock.ts';
import { ownerEventTypes } from '../events/catalog.ts';
import { decisionIssues } from './decisions.ts';
import { auditChildDeliveries } from './session-calls.ts';

export interface Violation {
  sessionId: string;
  rule:
    | 'two_live_owners'
    | 'promoted_twice'
    | 'promoted_unadmitted'
    | 'promoted_dropped'
    | 'cancellation_overwritten'
    | 'write_after_expiry'
    | 'recovered_twice'
    | 'sequence_gap'
    // waits: a person's decision, a timer's time and a scheduled prompt's time are kept
    | 'unapproved_call_started'
    | 'approved_call_started_twice'
    | 'woken_early'
    | 'promoted_early'
    // decisions (decisions.ts): a wait ends once, after it was asked, by an actor where the log names them
    | 'resolved_unopened_wait'
    | 'approval_call_mismatch'
    | 'decision_without_actor'
    // liveness (liveness.ts): work that nobody will do, or a session that can take no more
    | 'stranded_input'
    | 'unrecovered_execution'
    | 'recovery_incomplete'
    | 'wake_parked'
    | 'pending_full'
    | 'overdue_wait'
    // session calls (session-calls.ts): a child's end delivered once, and delivered; a child's input awaited
    | 'child_delivered_twice'
    | 'child_end_undelivered'
    | 'child_call_unawaited';
  seqs: number[];
  message: string;
}

interface Exec {
  id: string;
  ownerId: string;
  expiresAt: number;
  claimSeq: number;
  terminal: 'settled' | 'cancelled' | 'recovered' | null;
  terminalSeq: number;
}

/** Writes an execution may make only while its lease is live. */
/** Writes made by a claim's owner (its runner's included), checked against its lease: the catalog's `runner` and `owner` types. */
export const RUNNER_WRITES: ReadonlySet<string> = ownerEventTypes;

export function auditSession(events: readonly SessionEvent[]): Violation[] {
  const out: Violation[] = [];
  if (events.length === 0) return out;
  const sessionId = events[0]!.sessionId;
  const v = (rule: Violation['rule'], seqs: number[], message: string) => out.push({ sessionId, rule, seqs, message: `session ${sessionId}: ${message}` });
  const execs = new Map<string, Exec>();
  let current: Exec | undefined;
  const admitted = new Map<string, number>();
  const promoted = new Map<string, number>();
  const dropped = new Map<string, number>();
  const recovered = new Map<string, number>();
  /** Inputs' notBefore; approvals' decisions and starts; open timed waits' until. */
  const notBefore = new Map<string, number>();
  const approvals = new Map<string, { outcome: string | null; seq: number; startedSeq: number | null }>();
  const until = new Map<string, number>();
  let expectSeq = 1;
  // Sealing events (open step and tools failed/recovered) that directly follow an execution's end
  // (cancel, recovery) belong to that ending and are allowed.
  let sealing: string | null = null;
  const SEALS = new Set(['step.recovered', 'step.failed', 'tool.failed']);
  for (const e of events) {
    if (e.seq !== expectSeq) v('sequence_gap', [e.seq], `expected sequence ${expectSeq}, found ${e.seq}`);
    expectSeq = e.seq + 1;
    const execId = (e.payload as { executionId?: string }).executionId;
    const exec = execId ? execs.get(execId) : undefined;
    const isSeal = sealing !== null && execId === sealing && SEALS.has(e.type);
    if (!isSeal) sealing = null;
    if (exec && RUNNER_WRITES.has(e.type) && !isSeal) {
      if (exec.terminal === 'cancelled')
        v('cancellation_overwritten', [exec.terminalSeq, e.seq], `${e.type} for execution ${exec.id} after it was cancelled at seq ${exec.terminalSeq}`);
      else if (e.time >= exec.expiresAt && exec.terminal === null)
        v('write_after_expiry', [e.seq], `${e.type} by execution ${exec.id} at ${isoTime(e.time)}, after its lease expired at ${isoTime(exec.expiresAt)}`);
      else if (exec.terminal !== null)
        v('write_after_expiry', [exec.terminalSeq, e.seq], `${e.type} by execution ${exec.id} after it ended (${exec.terminal}) at seq ${exec.terminalSeq}`);
    }
    switch (e.type) {
      case 'execution.claimed': {
        if (current && current.terminal === null) {
          const live = e.time < current.expiresAt;
          v(
            'two_live_owners',
            [current.claimSeq, e.seq],
            `execution ${e.payload.executionId} (${e.payload.ownerId}) claimed at seq ${e.seq} while execution ${current.id} (${current.ownerId}, claimed at seq ${current.claimSeq}) was ${live ? 'live' : 'expired but not recovered'}`,
          );
        }
        current = { id: e.payload.executionId, ownerId: e.payload.ownerId, expiresAt: e.payload.expiresAt, claimSeq: e.seq, terminal: null, terminalSeq: 0 };
        execs.set(current.id, current);
        break;
      }
      case 'execution.renewed':
        if (exec && exec.terminal === null && e.time < exec.expiresAt) exec.expiresAt = e.payload.expiresAt;
        break;
      case 'execution.cancelled':
        if (exec && exec.terminal === null) Object.assign(exec, { terminal: 'cancelled', terminalSeq: e.seq });
        sealing = e.payload.executionId;
        break;
      case 'execution.settled':
        if (exec && exec.terminal === null) Object.assign(exec, { terminal: 'settled', terminalSeq: e.seq });
        break;
      case 'recovery.started': {
        const id = e.payload.executionId;
        if (recovered.has(id)) v('recovered_twice', [recovered.get(id)!, e.seq], `execution ${id} recovered twice`);
        recovered.set(id, e.seq);
        if (exec && exec.terminal === null) Object.assign(exec, { terminal: 'recovered', terminalSeq: e.seq });
        sealing = id;
        break;
      }
      case 'input.admitted':
        admitted.set(e.payload.inputId, e.seq);
        if (e.payload.notBefore !== undefined) notBefore.set(e.payload.inputId, e.payload.notBefore);
        break;
      case 'wait.started': {
        const w = e.payload;
        if (w.kind === 'approval') approvals.set(w.name, { outcome: null, seq: e.seq, startedSeq: null });
        if (w.until !== undefined) until.set(`${w.executionId}/${w.kind}/${w.name}`, w.until);
        break;
      }
      case 'wait.resolved': {
        const w = e.payload;
        const a = w.kind === 'approval' ? approvals.get(w.name) : undefined;
        if (a) a.outcome = w.outcome;
        const due = until.get(`${w.executionId}/${w.kind}/${w.name}`);
        if ((w.outcome === 'elapsed' || w.outcome === 'timed_out') && (due === undefined || e.time < due))
          v(
            'woken_early',
            [e.seq],
            `the ${w.kind} ${w.name} of execution ${w.executionId} ended ${w.outcome} at ${isoTime(e.time)}, ${due === undefined ? 'without a time' : `before its time ${isoTime(due)}`}`,
          );
        break;
      }
      case 'tool.started':
      case 'tool.called': {
        const a = approvals.get(e.payload.callId);
        if (!a || (e.type === 'tool.called' && e.payload.started !== true)) break;
        if (a.startedSeq !== null)
          v('approved_call_started_twice', [a.startedSeq, e.seq], `call ${e.payload.callId} started again at seq ${e.seq} (first at seq ${a.startedSeq})`);
        else if (a.outcome !== 'approved')
          v(
            'unapproved_call_started',
            [a.seq, e.seq],
            `call ${e.payload.callId} started at seq ${e.seq} though a person ${a.outcome === null ? 'had not decided on it' : `decided ${a.outcome}`} (asked at seq ${a.seq})`,
          );
        a.startedSeq = e.seq;
        break;
      }
      case 'input.promoted': {
        const id = e.payload.inputId;
        const at = notBefore.get(id);
        if (at !== undefined && e.time < at) v('promoted_early', [e.seq], `input ${id} was promoted at ${isoTime(e.time)}, before its time ${isoTime(at)}`);
        if (!admitted.has(id)) v('promoted_unadmitted', [e.seq], `input ${id} promoted without being admitted`);
        if (promoted.has(id)) v('promoted_twice', [promoted.get(id)!, e.seq], `input ${id} promoted twice`);
        if (dropped.has(id)) v('promoted_dropped', [dropped.get(id)!, e.seq], `input ${id} promoted after it was dropped`);
        promoted.set(id, e.seq);
        break;
      }
      case 'input.dropped':
        for (const id of e.payload.inputIds) dropped.set(id, e.seq);
        break;
    }
  }
  for (const d of decisionIssues(events)) if (d.rule !== 'approval_not_acted') v(d.rule, d.seqs, d.message);
  return out;
}

/** A log's events grouped by session, each session's in seq order (the log may interleave sessions). */
export function bySession(events: Iterable<SessionEvent>): SessionEvent[][] {
  const groups = new Map<string, SessionEvent[]>();
  for (const e of events) {
    let list = groups.get(e.sessionId);
    if (!list) groups.set(e.sessionId, (list = []));
    list.push(e);
  }
  return [...groups.values()].map((list) => list.sort((a, b) => a.seq - b.seq));
}

/** Audits a whole log (events of many sessions, in any interleaving but each session in order). */
export function auditLog(events: Iterable<SessionEvent>): Violation[] {
  return bySession(events).flatMap((list) => [...auditSession(list), ...auditChildDeliveries(list)]);
}
