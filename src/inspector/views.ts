/**
 * What the inspector's JSON routes answer, built from a session's events alone: its timeline, its
 * state and context folded with the machine's own `hydrate`, and the lease as it stood at a time.
 * Parsing of route parameters lives here too, with the 400/404 errors the server sends.
 */
import type { SessionEvent } from '../events/envelope.ts';
import type { EventLog } from '../events/event-log.ts';
import { isSessiondError, messageOf } from '../errors.ts';
import { validateId } from '../ids.ts';
import { hydrate, stateOf, type SessionStateValue } from '../machines/decider.ts';
import { leaseLive, type SessionContext } from '../machines/session-context.ts';
import { summarize, type SessionSummary } from './store.ts';

/** An error with the HTTP status and the stable code the server answers with. */
export class HttpError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
    this.name = 'HttpError';
  }
}

export interface TimelineRow {
  seq: number;
  type: string;
  time: number;
  position: number | null;
  id: string;
  payload: unknown;
}

export interface LeaseView {
  executionId: string;
  ownerId: string;
  leaseMs: number;
  expiresAt: number;
  /** `live` until expiresAt; `expired` past it while unsettled; `ended` once settled or cancelled. */
  status: 'live' | 'expired' | 'ended';
  /** The time the status is judged at (the event's time for time travel, now for the current view). */
  asOf: number;
  /** expiresAt - asOf (negative once expired). */
  remainingMs: number;
}

export interface StateView {
  sessionId: string;
  /** The sequence folded up to (0 = before the first event). */
  seq: number;
  lastSeq: number;
  state: SessionStateValue;
  /** The event at `seq` (null at 0). */
  event: TimelineRow | null;
  lease: LeaseView | null;
  owner: string | null;
  phase: string | null;
  pending: SessionContext['pending'];
  recovery: SessionContext['recovery'];
  context: SessionContext;
  summary: SessionSummary;
}

export interface SessionView extends StateView {
  timeline: TimelineRow[];
}

export interface AtView extends StateView {
  /** The projected rows at `seq` (see rows.ts), or null when the inspector has no rows source. */
  rows: unknown;
}

export function parseSessionId(raw: string): string {
  let id: string;
  try {
    id = decodeURIComponent(raw);
  } catch {
    throw new HttpError(400, 'invalid_id', `Invalid session id: ${JSON.stringify(raw)} is not valid URL encoding.`);
  }
  try {
    return validateId(id, 'session id');
  } catch (err) {
    throw new HttpError(400, isSessiondError(err) ? err.code : 'invalid_id', messageOf(err));
  }
}

export function parseSeq(raw: string | null, name = 'seq'): number {
  if (raw === null || !/^\d{1,15}$/.test(raw)) {
    throw new HttpError(400, 'invalid_seq', `Invalid ${name} ${JSON.stringify(raw)}: use a whole number >= 0 (0 is the session before its first event).`);
  }
  return Number(raw);
}

/** The session's events with seq <= upTo (all when omitted); 404 when the session has none, or fewer than upTo. */
export async function readSession(log: EventLog, sessionId: string, upTo?: number): Promise<{ events: SessionEvent[]; lastSeq: number }> {
  const lastSeq = await log.lastSeq(sessionId);
  if (lastSeq === 0) {
    throw new HttpError(404, 'session_not_found', `Session ${sessionId} has no events in ${log.name}. GET /api/sessions lists the sessions it has.`);
  }
  if (upTo !== undefined && upTo > lastSeq) {
    throw new HttpError(404, 'seq_not_found', `Session ${sessionId} has ${lastSeq} event${lastSeq === 1 ? '' : 's'}: pick a sequence from 0 to ${lastSeq} (asked for ${upTo}).`);
  }
  const events = upTo === 0 ? [] : await log.readSession(sessionId, upTo === undefined ? {} : { limit: upTo });
  return { events, lastSeq };
}

export function timelineRow(e: SessionEvent): TimelineRow {
  return { seq: e.seq, type: e.type, time: e.time, position: e.position ?? null, id: e.id, payload: e.payload };
}

export function leaseView(ctx: SessionContext, asOf: number): LeaseView | null {
  const e = ctx.execution;
  if (!e) return null;
  const status = e.outcome !== null ? 'ended' : leaseLive(ctx, asOf) ? 'live' : 'expired';
  return { executionId: e.id, ownerId: e.ownerId, leaseMs: e.leaseMs, expiresAt: e.expiresAt, status, asOf, remainingMs: e.expiresAt - asOf };
}

/** State, context and lease folded from `events` (a prefix of the session's log). */
export function stateView(sessionId: string, events: readonly SessionEvent[], lastSeq: number, asOf?: number): StateView {
  const snapshot = hydrate(sessionId, events);
  const last = events[events.length - 1];
  const ctx = snapshot.context;
  const exec = ctx.execution;
  return {
    sessionId, seq: ctx.seq, lastSeq, state: stateOf(snapshot), event: last ? timelineRow(last) : null,
    lease: leaseView(ctx, asOf ?? last?.time ?? 0),
    owner: exec && exec.outcome === null ? exec.ownerId : null, phase: exec?.phase ?? null,
    pending: ctx.pending, recovery: ctx.recovery, context: ctx, summary: summarize(snapshot, last),
  };
}
