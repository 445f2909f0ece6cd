/**
 * Time travel: a session's snapshot at any sequence, from the nearest snapshot at or before it (the
 * store's live one, or the index's checkpoint, every CHECKPOINT_EVERY events) plus the events after
 * it, read from the log. A checkpoint is used only if the log still has its head event at its seq
 * (else the session was deleted and written again: from seq 0). An index that is behind only makes
 * the fold longer, never different.
 */
import { ErrorCode, SessiondError, HttpError } from '../errors.ts';
import type { EventLog } from '../events/event-log.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { evolve, initialSnapshot } from '../machines/decider.ts';
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
): Promise<Travelled> {
  const lastSeq = await sessionLastSeq(log, sessionId, upTo);
  const seq = upTo ?? lastSeq;
  if (seq === 0) return { snapshot: initialSnapshot(sessionId), previous: null, event: null, lastSeq };
  // start strictly before seq: the event at seq is read too (the view shows it, the chart its move)
  const live = currentSnapshot(store(), sessionId, seq - 1);
  const checkpoint = index?.checkpointAt(sessionId, seq - 1);
  let base = live ?? initialSnapshot(sessionId);
  let events: SessionEvent[] | undefined;
  if (checkpoint && checkpoint.context.seq > base.context.seq) {
    // its own event is read again: the log must still hold it
    const from = checkpoint.context.seq - 1;
    const read = await log.readSession(sessionId, { afterSeq: from, limit: seq - from });
    if (read[0]?.id === checkpoint.context.head?.id) {
      base = checkpoint;
      events = read.slice(1);
    }
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
