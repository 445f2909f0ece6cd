/**
 * Audits a log for liveness from its events alone: work that nobody will do, judged at `now` for work
 * older than `graceMs` (why and each finding: docs/architecture.md#design-notes-liveness).
 */
import type { SessionEvent } from '../events/envelope.ts';
import { bySession, type Violation } from './audit-log.ts';
import { isoTime as iso } from '../clock.ts';
import type { PendingLimits } from '../machines/commands.ts';
import { DEFAULT_LIMITS } from '../input/limits.ts';
import { promptBytes } from '../events/prompt.ts';
import { auditUnawaitedChildren, auditUndeliveredChildren } from './session-calls.ts';

export interface LivenessOptions {
  /** The moment of judgement (ms since the epoch). */
  now: number;
  /** Work younger than this is not yet late (default `DEFAULT_LIVENESS_GRACE_MS`). */
  graceMs?: number;
  /** The limits the workers run with (default the engine's defaults): a session at them takes no new prompt. */
  limits?: PendingLimits;
}

/** Lease (30 s) + sweep (5 s) + margin, for a deployment with the default settings. */
export const DEFAULT_LIVENESS_GRACE_MS = 60_000;

interface Exec {
  id: string;
  ownerId: string;
  expiresAt: number;
  ended: boolean;
  endedAt: number;
  claimSeq: number;
}

export function auditSessionLiveness(events: readonly SessionEvent[], options: LivenessOptions): Violation[] {
  const out: Violation[] = [];
  if (events.length === 0) return out;
  const sessionId = events[0]!.sessionId;
  const graceMs = options.graceMs ?? DEFAULT_LIVENESS_GRACE_MS;
  const late = (t: number) => options.now - t > graceMs;
  const v = (rule: Violation['rule'], seqs: number[], message: string) => out.push({ sessionId, rule, seqs, message: `session ${sessionId}: ${message}` });
  const waiting = new Map<string, { seq: number; time: number }>(); // admitted with a wake, not promoted (from its time on, when scheduled)
  const waits = new Map<string, { seq: number; kind: string; name: string; executionId: string; until: number | undefined }>(); // open
  const pending = new Map<string, { seq: number; bytes: number }>(); // admitted, neither promoted nor dropped
  const recoveries = new Map<string, number>(); // started, not completed
  const parked = new Map<string, number>();
  let current: Exec | undefined;
  for (const e of events) {
    const p = e.payload as { executionId?: string };
    switch (e.type) {
      case 'execution.claimed':
        current = { id: e.payload.executionId, ownerId: e.payload.ownerId, expiresAt: e.payload.expiresAt, ended: false, endedAt: 0, claimSeq: e.seq };
        parked.clear();
        break;
      case 'execution.renewed':
        if (current && current.id === p.executionId && !current.ended) current.expiresAt = e.payload.expiresAt;
        break;
      case 'execution.settled':
      case 'execution.cancelled':
      case 'recovery.started':
        if (current && current.id === p.executionId && !current.ended) Object.assign(current, { ended: true, endedAt: e.time });
        if (e.type === 'recovery.started') recoveries.set(e.payload.executionId, e.seq);
        break;
      case 'recovery.completed':
        recoveries.delete(e.payload.executionId);
        break;
      case 'recovery.wake_failed':
        if (e.payload.parked) parked.set(e.payload.executionId, e.seq);
        break;
      case 'input.admitted':
        if (e.payload.wake) waiting.set(e.payload.inputId, { seq: e.seq, time: Math.max(e.time, e.payload.notBefore ?? 0) });
        pending.set(e.payload.inputId, { seq: e.seq, bytes: promptBytes(e.payload.prompt) });
        break;
      case 'wait.started':
        waits.set(`${e.payload.executionId}/${e.payload.kind}/${e.payload.name}`, { seq: e.seq, ...e.payload, until: e.payload.until });
        break;
      case 'wait.resolved':
        waits.delete(`${e.payload.executionId}/${e.payload.kind}/${e.payload.name}`);
        break;
      case 'input.promoted':
        waiting.delete(e.payload.inputId);
        pending.delete(e.payload.inputId);
        break;
      case 'input.dropped':
        for (const id of e.payload.inputIds) {
          waiting.delete(id);
          pending.delete(id);
        }
        break;
    }
  }
  const limits = options.limits ?? DEFAULT_LIMITS;
  const bytes = [...pending.values()].reduce((n, p) => n + p.bytes, 0);
  if (pending.size >= limits.maxPendingInputs || bytes >= limits.maxPendingBytes) {
    const first = pending.values().next().value;
    v(
      'pending_full',
      first ? [first.seq] : [],
      `${pending.size} inputs (${bytes} bytes of prompts) wait unrun, at the limit of ${limits.maxPendingInputs} inputs or ${limits.maxPendingBytes} bytes per session: every new prompt is refused. Wake the session to run them (they were admitted${waiting.size === 0 ? ' without a wake' : ''}), or drop them: sessiond cancel ${sessionId} --pending`,
    );
  }
  for (const [executionId, seq] of recoveries)
    v('recovery_incomplete', [seq], `the recovery of execution ${executionId} started at seq ${seq} and never completed`);
  for (const [executionId, seq] of parked)
    v(
      'wake_parked',
      [seq],
      `the wake owed after recovering execution ${executionId} was given up on (parked at seq ${seq}); wake the session by hand once the cause is fixed`,
    );
  for (const w of waits.values()) {
    if (w.until === undefined || !late(w.until)) continue;
    v(
      'overdue_wait',
      [w.seq],
      `the ${w.kind} ${w.name} of execution ${w.executionId} was due at ${iso(w.until)}, ${Math.round((options.now - w.until) / 1000)} s before ${iso(options.now)}, and never ${w.kind === 'timer' ? 'elapsed' : 'timed out'}: no worker's recovery sweep ran (start one: sessiond start)`,
    );
  }
  if (waits.size > 0) return out; // a turn that waits holds the inputs admitted meanwhile
  if (current && !current.ended) {
    if (late(current.expiresAt)) {
      v(
        'unrecovered_execution',
        [current.claimSeq],
        `execution ${current.id} (${current.ownerId}) never ended and its lease expired at ${iso(current.expiresAt)}, ${Math.round((options.now - current.expiresAt) / 1000)} s before ${iso(options.now)}, but it was never recovered`,
      );
    }
    return out; // an execution in progress (or awaiting recovery) holds the queued inputs
  }
  const idleSince = current?.endedAt ?? 0;
  for (const [inputId, at] of waiting) {
    const since = Math.max(at.time, idleSince);
    if (late(since)) {
      v(
        'stranded_input',
        [at.seq],
        `input ${inputId} (admitted at seq ${at.seq}, ${iso(at.time)}) asked for a wake and was never run: no execution has been in progress since ${iso(since)}, more than ${Math.round(graceMs / 1000)} s before ${iso(options.now)}`,
      );
    }
  }
  return out;
}

/** Liveness of a whole log (events of many sessions, each session in order). */
export function auditLiveness(events: Iterable<SessionEvent>, options: LivenessOptions): Violation[] {
  const groups = bySession(events);
  return [
    ...groups.flatMap((list) => auditSessionLiveness(list, options)),
    ...auditUndeliveredChildren(groups, options.now, options.graceMs ?? DEFAULT_LIVENESS_GRACE_MS),
    ...auditUnawaitedChildren(groups, options.now, options.graceMs ?? DEFAULT_LIVENESS_GRACE_MS),
  ];
}
