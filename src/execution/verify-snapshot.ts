/**
 * The check a stored snapshot passes before a cold load rests on it (command-handler.ts): a stored
 * snapshot is a cache anyone with the store's credentials can write, so what it claims (its head
 * event, its owner, each pending input's admission) must be found in the log, in a bounded number
 * of reads.
 */
import type { EventLog } from '../events/event-log.ts';
import type { SessionEvent } from '../events/envelope.ts';
import type { SessionSnapshot } from '../machines/decider.ts';
import { MAX_CHECKED_PENDING } from '../machines/snapshot-store.ts';
import { foldContext, initialContext, type EventRef, type PendingInput } from '../machines/session-context.ts';

const STATES: readonly unknown[] = ['idle', 'claimed', 'running', 'recovering', 'settled'];
const IN_EXECUTION: readonly unknown[] = ['claimed', 'running', 'recovering'];

const isRef = (r: unknown): r is EventRef & { position: number } =>
  typeof r === 'object' && r !== null && typeof (r as EventRef).id === 'string' && Number.isInteger((r as EventRef).position) && (r as EventRef).position! >= 1;

/** Plain data equal (key order aside). */
function sameData(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  return ka.length === kb.length && ka.every((k) => sameData((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/**
 * Checks a stored snapshot against the log, in a bounded number of reads: the log's last seq, the
 * message at the head event's position, and the message at each claimed pending input's admission
 * (positions shared by several are read once; more than `MAX_CHECKED_PENDING` pending inputs are
 * not checked, the session folds instead). The head event must be the one the snapshot names (id
 * and seq), and every pending input's `input.admitted` must be in the log at its seq with the same
 * id and content. The returned snapshot has its pending inputs cleared of `unverified`.
 */
export async function verifyStoredSnapshot(
  log: EventLog,
  sessionId: string,
  stored: SessionSnapshot,
): Promise<{ snapshot: SessionSnapshot } | { reason: string; report: boolean }> {
  const ctx = stored.context;
  const fail = (reason: string) => ({ reason, report: true });
  if (typeof ctx !== 'object' || ctx === null || !Array.isArray(ctx.pending))
    return fail('it is not a sessiond session snapshot (no context with pending inputs)');
  if (ctx.sessionId !== sessionId) return fail(`it is a snapshot of session ${JSON.stringify(ctx.sessionId)}`);
  if (!Number.isInteger(ctx.seq) || ctx.seq < 1) return fail(`its seq ${JSON.stringify(ctx.seq)} is not a sequence of the log`);
  if (!STATES.includes(stored.value) || (IN_EXECUTION.includes(stored.value) && (typeof ctx.execution !== 'object' || ctx.execution === null))) {
    return fail(`its state ${JSON.stringify(stored.value)} is not one the session machine can be in with that execution`);
  }
  if (!isRef(ctx.head)) return fail('it names no head event (the event at its seq), so it cannot be checked against the log');
  if (ctx.pending.length > MAX_CHECKED_PENDING)
    return { reason: `it claims ${ctx.pending.length} pending inputs (more than the ${MAX_CHECKED_PENDING} checked per load)`, report: false };
  const last = await log.lastSeq(sessionId);
  if (ctx.seq > last) return fail(`it claims seq ${ctx.seq} but the log of session ${sessionId} ends at ${last}`);
  const batches = new Map<number, Promise<SessionEvent[]>>();
  const eventAt = async (ref: EventRef, seq: number) => {
    const position = ref.position!;
    let batch = batches.get(position);
    if (!batch) batches.set(position, (batch = log.readAll({ after: position - 1, limit: 1 })));
    return (await batch).find((e) => e.position === position && e.sessionId === sessionId && e.seq === seq && e.id === ref.id);
  };
  if (!(await eventAt(ctx.head, ctx.seq)))
    return fail(`the log has no event ${ctx.head.id} at seq ${ctx.seq} (position ${ctx.head.position}), the head it names`);
  // the owner decides who reaches the session: it must be the one its first event gave it
  const [first] = await log.readSession(sessionId, { afterSeq: 0, limit: 1 });
  const owner = first?.type === 'input.admitted' || first?.type === 'session.forked' ? (first.payload.owner ?? null) : null;
  if ((ctx.ownedBy ?? null) !== owner)
    return fail(`it names owner ${JSON.stringify(ctx.ownedBy ?? null)}, but the session's first event gives it ${JSON.stringify(owner)}`);
  const pending: PendingInput[] = [];
  const ids = new Set<string>();
  for (const claimed of ctx.pending) {
    if (typeof claimed !== 'object' || claimed === null || typeof claimed.inputId !== 'string') return fail('a pending input it claims is not an input');
    if (ids.has(claimed.inputId)) return fail(`it claims input ${JSON.stringify(claimed.inputId)} pending twice`);
    ids.add(claimed.inputId);
    const what = `pending input ${JSON.stringify(claimed.inputId)}`;
    if (!isRef(claimed.admittedBy) || !Number.isInteger(claimed.seq) || claimed.seq < 1 || claimed.seq > ctx.seq)
      return fail(`${what} names no admission in the log`);
    const admitted = await eventAt(claimed.admittedBy, claimed.seq);
    if (admitted?.type !== 'input.admitted')
      return fail(`${what} was never admitted: the log has no input.admitted ${claimed.admittedBy.id} at seq ${claimed.seq}`);
    // the pending input the log's admission folds to, compared with the claimed one field by field
    const expected = foldContext({ ...initialContext(sessionId), seq: claimed.seq - 1 }, admitted).pending[0]!;
    const { unverified: _u, ...asClaimed } = claimed;
    if (!sameData(expected, asClaimed)) return fail(`${what} differs from its admission in the log (${admitted.id} at seq ${claimed.seq})`);
    pending.push(asClaimed);
  }
  return { snapshot: { ...stored, context: { ...ctx, pending } } };
}
