/**
 * Time travel: a session's snapshot at any sequence, from the nearest snapshot at or before it (the
 * store's live one, the index's checkpoint every CHECKPOINT_EVERY events, or the workers' latest
 * snapshot of the session, which serves the views near its head before the index has followed the
 * log there) plus the events after it, read from the log. A stored snapshot is used only if the log
 * still has its head event at its seq (else the session was deleted and written again: from seq 0).
 * An index that is behind only makes the fold longer, never different.
 */
import { ErrorCode, SessiondError, HttpError } from '../errors.ts';
import type { EventLog } from '../events/event-log.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { evolve, initialSnapshot, type SessionSnapshot } from '../machines/decider.ts';
import type { SnapshotStore } from '../machines/snapshot-store.ts';
import { currentSnapshot, type InspectorContext } from './store.ts';
import type { InspectorIndexStore } from './index-store.ts';
import type { Travelled } from './view-types.ts';

/** The session's last sequence; 404 when it has no events, or fewer than `upTo`. */
export async function sessionLastSeq(log: EventLog, sessionId: string, upTo?: number): Promise<number> {
  const lastSeq = await log.lastSeq(sessionId);
  if (lastSeq === 0) {
    throw new HttpError(404, 'session_not_found', `Session ${sessionId} has no events in ${log.name}. GET /api/sessions lists the sessions it has.`);
  }
  if (upTo !== undefined && upTo > lastSeq) {
    throw new HttpError(
      404,
      'seq_not_found',
      `Session ${sessionId} has ${lastSeq} event${lastSeq === 1 ? '' : 's'}: pick a sequence from 0 to ${lastSeq} (asked for ${upTo}).`,
    );
  }
  return lastSeq;
}

/** The session at `upTo` (default: its last sequence). */
export async function travel(
  log: EventLog,
  store: () => InspectorContext,
  sessionId: string,
  upTo?: number,
  index?: Pick<InspectorIndexStore, 'checkpointAt'>,
  snapshots?: Pick<SnapshotStore, 'get'>,
): Promise<Travelled> {
  const lastSeq = await sessionLastSeq(log, sessionId, upTo);
  const seq = upTo ?? lastSeq;
  if (seq === 0) return { snapshot: initialSnapshot(sessionId), previous: null, event: null, lastSeq };
  // start strictly before seq: the event at seq is read too (the view shows it, the chart its move)
  const live = currentSnapshot(store(), sessionId, seq - 1);
  let base = live ?? initialSnapshot(sessionId);
  let events: SessionEvent[] | undefined;
  // the nearer of the index's checkpoint and the workers' snapshot first; a stored one the log contradicts is passed over
  const latest = await snapshots?.get(sessionId).catch(() => undefined);
  const stored = [index?.checkpointAt(sessionId, seq - 1), latest && latest.context.seq <= seq ? latest : undefined]
    .filter((c): c is SessionSnapshot => c !== undefined && c.context.seq > base.context.seq)
    .sort((a, b) => b.context.seq - a.context.seq);
  for (const candidate of stored) {
    // its own event is read again: the log must still hold it
    const from = candidate.context.seq - 1;
    const read = await log.readSession(sessionId, { afterSeq: from, limit: seq - from });
    if (read[0]?.id !== candidate.context.head?.id) continue;
    // the workers' snapshot at the very seq: the state there, without the one before (the chart shows no move)
    if (candidate.context.seq === seq) return { snapshot: candidate, previous: null, event: read[0]!, lastSeq };
    base = candidate;
    events = read.slice(1);
    break;
  }
  const from = base.context.seq;
  events ??= await log.readSession(sessionId, { afterSeq: from, limit: seq - from });
  if (events.length !== seq - from) {
    throw new SessiondError(
      ErrorCode.InconsistentStream,
      `Session ${sessionId}: ${log.name} returned ${events.length} events after seq ${from}, expected ${seq - from} (its last seq is ${lastSeq}).`,
    );
  }
  for (let i = 0; i < events.length - 1; i++) base = evolve(base, events[i]!);
  const event = events[events.length - 1]!;
  return { snapshot: evolve(base, event), previous: base, event, lastSeq };
}
