/**
 * A session's decisions checked against what the machine lets happen: a wait ends only after it
 * started and only once (an approval naming the call that asked), by an actor wherever the log
 * records actors; and, for a log that came from an export (`acted`), an approval its log never
 * acted on (the call never started) carries no authority: a replay does not bring it over.
 */
import type { SessionEvent } from '../events/envelope.ts';

export type DecisionRule = 'resolved_unopened_wait' | 'approval_call_mismatch' | 'decision_without_actor' | 'approval_not_acted';

export interface DecisionIssue {
  rule: DecisionRule;
  /** The event that does not hold (a replay keeps the session's events before it). */
  seq: number;
  seqs: number[];
  message: string;
}

const actorOf = (payload: unknown) => (payload as { actor?: unknown }).actor;

/** `acted`: also flag approvals no tool start followed (what an export's replay must not trust). */
export function decisionIssues(events: Iterable<SessionEvent>, options: { acted?: boolean } = {}): DecisionIssue[] {
  const out: DecisionIssue[] = [];
  const open = new Map<string, { seq: number; callId: string | undefined }>();
  const approved = new Map<string, number>();
  let actors = false;
  for (const e of events) {
    if (actorOf(e.payload) !== undefined) actors = true;
    switch (e.type) {
      case 'wait.started': {
        const w = e.payload;
        open.set(`${w.executionId}/${w.kind}/${w.name}`, { seq: e.seq, callId: w.callId });
        break;
      }
      case 'wait.resolved': {
        const w = e.payload;
        const key = `${w.executionId}/${w.kind}/${w.name}`;
        const asked = open.get(key);
        const what = `the ${w.kind} ${w.name} of execution ${w.executionId}`;
        if (!asked) {
          out.push({
            rule: 'resolved_unopened_wait',
            seq: e.seq,
            seqs: [e.seq],
            message: `${what} ended ${w.outcome} at seq ${e.seq}, but no open wait asked for it`,
          });
          break;
        }
        open.delete(key);
        if (w.kind === 'approval' && w.callId !== undefined && asked.callId !== undefined && w.callId !== asked.callId) {
          out.push({
            rule: 'approval_call_mismatch',
            seq: e.seq,
            seqs: [asked.seq, e.seq],
            message: `${what} was asked for call ${asked.callId} (seq ${asked.seq}) but decided for call ${w.callId} at seq ${e.seq}`,
          });
          break;
        }
        if (actors && (w.outcome === 'approved' || w.outcome === 'denied') && actorOf(w) === undefined) {
          out.push({
            rule: 'decision_without_actor',
            seq: e.seq,
            seqs: [asked.seq, e.seq],
            message: `${what} was ${w.outcome} at seq ${e.seq} by nobody the log names, though it names the actors of other events`,
          });
          break;
        }
        if (w.kind === 'approval' && w.outcome === 'approved') approved.set(asked.callId ?? w.name, e.seq);
        break;
      }
      case 'tool.called':
        if (e.payload.started) approved.delete(e.payload.callId);
        break;
      case 'tool.started':
        approved.delete(e.payload.callId);
        break;
    }
  }
  if (options.acted)
    for (const [callId, seq] of approved)
      out.push({
        rule: 'approval_not_acted',
        seq,
        seqs: [seq],
        message: `the approval of call ${callId} at seq ${seq} was never acted on in this log (the call did not start): an export is evidence, not authority, so it must be approved again where it runs`,
      });
  return out.sort((a, b) => a.seq - b.seq);
}
