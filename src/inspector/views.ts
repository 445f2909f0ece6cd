/**
 * What the inspector's JSON routes answer: a session's state and context as travelled to a sequence
 * (travel.ts), the lease as it stood at a time, and its timeline rows.
 * Parsing of route parameters lives here too, with the 400/404 errors the server sends (`HttpError`,
 * src/errors.ts). The shapes timeline.ts and travel.ts share with these views are in view-types.ts.
 */
import type { CapacityWait } from '../sessions/sessions.ts';
import { sessionView } from '../machines/session-view.ts';
import type { BudgetView } from '../machines/budget-view.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { HttpError, isSessiondError, messageOf } from '../errors.ts';
import { validateId } from '../ids.ts';
import type { SessionStateValue } from '../machines/decider.ts';
import { leaseLive, type SessionContext } from '../machines/session-context.ts';
import { summarize, type SessionSummary, type SessionTree } from './store.ts';
import type { TimelinePage, TimelineRow, Travelled } from './view-types.ts';

/** Admitted input ids a view shows of the context (the latest). */
export const ADMITTED_SHOWN = 20;

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
  /**
   * What ended it, as the events say: settled `succeeded`, `failed` (with its error), `waiting`
   * (the turn waits holding no lease), `handed_back` (settled `released`: its worker shut down and
   * admitted a continuation), `cancelled`; or, for a lease that expired unsettled, `recovered` once
   * a recovery completed for it. Null while live, or expired and not yet recovered.
   */
  ended: { outcome: LeaseEnd; error: string | null } | null;
}

export type LeaseEnd = 'succeeded' | 'failed' | 'waiting' | 'handed_back' | 'cancelled' | 'recovered';

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
  /** The turn's waits at this sequence: open ones (outcome null) and those it resolved. */
  waits: SessionContext['waits'];
  /** Tokens the session's model steps and compactions used up to this sequence. */
  usage: SessionContext['usage'];
  /** The session's budget and its spend since the latest reset, at this sequence (null: none set). */
  budget: BudgetView | null;
  /** The machine's folded context, its `admitted` ids cut to the latest ADMITTED_SHOWN (so a view's size does not grow with the session). */
  context: SessionContext;
  /** How many admitted ids the context holds (the machine keeps up to its ADMISSION_WINDOW). */
  admittedTotal: number;
  summary: SessionSummary;
}

export interface SessionView extends StateView {
  /** The last page of the session's events (earlier pages: GET /api/sessions/:id/events?before=SEQ). */
  timeline: TimelinePage;
  /** A model call of its running turn waits for room under the deployment's limits (an inspector in a worker with limits). */
  capacity?: CapacityWait;
  /** Its parent and children (sessions calling sessions), as the inspector has folded them. */
  tree: SessionTree;
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

export function timelineRow(e: SessionEvent): TimelineRow {
  return { seq: e.seq, type: e.type, time: e.time, committedAt: e.committedAt ?? null, position: e.position ?? null, id: e.id, payload: e.payload };
}

export function leaseView(ctx: SessionContext, asOf: number): LeaseView | null {
  const e = ctx.execution;
  if (!e) return null;
  const status = e.outcome !== null ? 'ended' : leaseLive(ctx, asOf) ? 'live' : 'expired';
  const outcome: LeaseEnd | null = e.outcome === 'released' ? 'handed_back' : (e.outcome ?? (ctx.recovery?.executionId === e.id ? 'recovered' : null));
  const ended = outcome === null ? null : { outcome, error: e.error?.message ?? null };
  return { executionId: e.id, ownerId: e.ownerId, leaseMs: e.leaseMs, expiresAt: e.expiresAt, status, asOf, remainingMs: e.expiresAt - asOf, ended };
}

/** State, context and lease of a travelled session; the lease judged at `asOf` (default: the event's time). */
export function stateView(sessionId: string, at: Travelled, asOf?: number): StateView {
  const { snapshot, event, lastSeq } = at;
  const ctx = snapshot.context;
  const view = sessionView(snapshot, asOf ?? event?.time ?? 0);
  return {
    sessionId,
    seq: ctx.seq,
    lastSeq,
    state: view.state,
    event: event ? timelineRow(event) : null,
    lease: leaseView(ctx, asOf ?? event?.time ?? 0),
    owner: view.owner,
    phase: view.phase,
    pending: ctx.pending,
    recovery: ctx.recovery,
    waits: ctx.waits,
    usage: ctx.usage,
    budget: view.budget,
    context: { ...ctx, admitted: ctx.admitted.slice(-ADMITTED_SHOWN) },
    admittedTotal: ctx.admitted.length,
    summary: summarize(snapshot, event ?? undefined),
  };
}
