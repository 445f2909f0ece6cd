/**
 * One session's stored events folded with the current machine and catalog, and what goes wrong:
 * undecodable events, one out of order or after a gap (the fold stops), the fast fold and the machine
 * disagreeing, a snapshot contradicting the fold, the safety audit's violations (on every event that
 * decodes).
 */
import { auditSession } from '../audit/audit-log.ts';
import { decisionIssues } from '../audit/decisions.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { preview } from '../events/codec.ts';
import { messageOf } from '../errors.ts';
import { evolve, evolveByMachine, initialSnapshot, type SessionMachine, type SessionSnapshot } from '../machines/decider.ts';
import { sessionMachine } from '../machines/session-machine.ts';
import { MACHINE_VERSION } from '../machines/snapshot-store.ts';
import { firstDifference } from './first-difference.ts';
import type { Problem } from './problems.ts';
import { snapshotDifference } from './snapshot-check.ts';
import type { StoredItem, StoredSnapshot } from './stored-log.ts';

export interface SessionFoldOptions {
  machine?: SessionMachine;
  /** The session's stored snapshot (shaped like one: see `isSnapshotData`). */
  snapshot?: StoredSnapshot & { data: SessionSnapshot };
  /** The version a stored snapshot must carry to be compared whole (default `MACHINE_VERSION`). */
  machineVersion?: string;
  /** The fast fold checked against the machine (default `evolve`; tests pass a broken one). */
  evolve?: typeof evolve;
  /** The events come from an export: an approval they never acted on is refused, as a replay withholds it (audit/decisions.ts). */
  evidence?: boolean;
  /** Called with the number of events folded, after each page. */
  onEvents?: (count: number) => void;
}

export interface SessionFold {
  events: number;
  /** The last sequence folded (0 when none). */
  seq: number;
  problems: Problem[];
}

/** Why an event cannot be the next one, in words. */
function orderReason(expected: number, e: SessionEvent): string {
  if (e.seq > expected)
    return `a gap: seq ${expected}${e.seq - 1 > expected ? `..${e.seq - 1}` : ''} missing, the next stored event (${e.id}, ${e.type}) has seq ${e.seq}`;
  return `out of order: event ${e.id} (${e.type}) has seq ${e.seq} after seq ${expected - 1} (repeated, or stored out of order)`;
}

export async function foldSession(sessionId: string, pages: AsyncIterable<StoredItem[]>, options: SessionFoldOptions = {}): Promise<SessionFold> {
  const machine = options.machine ?? sessionMachine;
  const compareMachine = machine === sessionMachine; // a given machine is folded by interpreting it already
  const fast = options.evolve ?? evolve;
  const stored = options.snapshot;
  const problems: Problem[] = [];
  const decoded: SessionEvent[] = [];
  let snapshot: SessionSnapshot = initialSnapshot(sessionId, machine);
  let stopped = false;
  let machineDiffers = false;
  let lastPosition = 0;
  let count = 0;
  const refuse = (seq: number, reason: string) => {
    problems.push({ kind: 'refused', seq, reason });
    stopped = true;
  };
  const step = (e: SessionEvent) => {
    if (e.seq !== snapshot.context.seq + 1) return refuse(e.seq, orderReason(snapshot.context.seq + 1, e));
    if (e.position !== undefined && e.position < lastPosition) {
      return refuse(e.seq, `out of commit order: seq ${e.seq} is at position ${e.position}, before seq ${e.seq - 1} at position ${lastPosition}`);
    }
    lastPosition = e.position ?? lastPosition;
    let next: SessionSnapshot;
    try {
      next = fast(snapshot, e, machine);
    } catch (err) {
      return refuse(e.seq, `the fold refuses event ${e.id} (${e.type}): ${messageOf(err)}`);
    }
    if (compareMachine && !machineDiffers) {
      let byMachine: SessionSnapshot | undefined;
      try {
        byMachine = evolveByMachine(snapshot, e, machine);
      } catch (err) {
        return refuse(e.seq, `the machine refuses event ${e.id} (${e.type}): ${messageOf(err)}`);
      }
      const d = firstDifference(next, byMachine);
      if (d) {
        machineDiffers = true;
        problems.push({
          kind: 'decides_differently',
          seq: e.seq,
          reason: `folding ${e.type} (${e.id}), the fast fold says ${d.path} is ${preview(d.left)} and the machine says ${preview(d.right)}`,
        });
      }
    }
    snapshot = next;
    if (stored && stored.seq === e.seq) {
      const why = snapshotDifference(stored, snapshot, options.machineVersion ?? MACHINE_VERSION);
      if (why) problems.push({ kind: 'decides_differently', seq: e.seq, reason: why });
    }
  };
  for await (const page of pages) {
    for (const item of page) {
      if ('undecodable' in item) {
        const u = item.undecodable;
        if (!stopped) problems.push({ kind: 'undecodable', seq: u.seq ?? snapshot.context.seq + 1, reason: u.reason });
        stopped = true;
        continue;
      }
      count++;
      decoded.push(item.event);
      if (!stopped) step(item.event);
    }
    options.onEvents?.(page.length);
  }
  if (stored && !stopped && stored.seq > snapshot.context.seq) {
    problems.push({
      kind: 'decides_differently',
      seq: snapshot.context.seq + 1,
      reason: `the stored snapshot is at seq ${stored.seq}, but the log of the session ends at seq ${snapshot.context.seq}: events the code that stored it had folded are gone`,
    });
  }
  for (const v of auditSession(decoded)) {
    if (v.rule === 'sequence_gap') continue; // the fold says where, above
    const prefix = `session ${sessionId}: `;
    const message = v.message.startsWith(prefix) ? v.message.slice(prefix.length) : v.message;
    problems.push({ kind: 'refused', seq: Math.max(...v.seqs), reason: `${v.rule}: ${message}` });
  }
  if (options.evidence)
    for (const d of decisionIssues(decoded, { acted: true }))
      if (d.rule === 'approval_not_acted') problems.push({ kind: 'refused', seq: d.seq, reason: `${d.rule}: ${d.message}` });
  return { events: count, seq: snapshot.context.seq, problems };
}
