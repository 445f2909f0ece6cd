/**
 * Time travel: a session's snapshot at any sequence, from the nearest snapshot the inspector's store
 * holds at or before it (its checkpoints, every CHECKPOINT_EVERY events, or its live snapshot) plus
 * the events after it, read from the log. Never a fold from seq 0 once the store has followed the
 * log past a checkpoint; a store that is behind only makes the fold longer, never different.
 */
import { ErrorCode, SessiondError, HttpError } from '../errors.ts';
import type { EventLog } from '../events/event-log.ts';
import { evolve, initialSnapshot } from '../machines/decider.ts';
import { nearestSnapshot, type InspectorContext } from './store.ts';
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
export async function travel(log: EventLog, store: () => InspectorContext, sessionId: string, upTo?: number): Promise<Travelled> {
  const lastSeq = await sessionLastSeq(log, sessionId, upTo);
  const seq = upTo ?? lastSeq;
  if (seq === 0) return { snapshot: initialSnapshot(sessionId), previous: null, event: null, lastSeq };
  // start strictly before seq: the event at seq is read too (the view shows it, the chart its move)
  let base = nearestSnapshot(store(), sessionId, seq - 1) ?? initialSnapshot(sessionId);
  const from = base.context.seq;
  const events = await log.readSession(sessionId, { afterSeq: from, limit: seq - from });
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
