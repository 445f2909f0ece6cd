/**
 * Ending a turn's waits from outside (an approval or denial, a signal's value, an elapsed timer): one
 * `resolve` command decided by the machine; the last wait admits the input that resumes the turn.
 * Idempotent by the wait: the same decision again answers `resolved: false`, a different one is
 * refused (`already_resolved`).
 */
import { validateId } from '../ids.ts';
import { decisionOf } from '../machines/session-machine.ts';
import type { CommandHandler } from '../execution/command-handler.ts';
import { InvalidInputError, isRefusal } from '../errors.ts';
import { actorOf } from '../sessions/actor.ts';
import type { WaitKind, WaitOutcome } from '../events/catalog.ts';

export interface ResolveRequest {
  kind: WaitKind;
  /** An approval's call id, a signal's name, a timer's `sleep-N`. */
  name: string;
  outcome: Exclude<WaitOutcome, 'cancelled'>;
  /** A person's words on the decision (the model sees a denial's reason). */
  reason?: string;
  /** A signal's value (JSON-like data). */
  data?: unknown;
  /** Who resolves it (recorded in `wait.resolved`). */
  actor?: string;
}

export interface ResolveResult {
  sessionId: string;
  kind: WaitKind;
  name: string;
  outcome: Exclude<WaitOutcome, 'cancelled'>;
  /** False when the wait had already ended so (the same decision sent again): nothing changed. */
  resolved: boolean;
  /** The input that resumes the turn, when this was its last open wait (the turn runs again). */
  resumeInputId?: string;
  /** Sequence of the `wait.resolved` event (absent when nothing changed). */
  seq?: number;
}

/** The id of the input that resumes a turn whose execution `executionId` waited (one per waiting execution). */
export const resumeInputId = (executionId: string) => `inp_resume_${executionId}`.slice(0, 128);

export async function resolveWait(handler: CommandHandler, sessionId: string, request: ResolveRequest): Promise<ResolveResult> {
  validateId(sessionId, 'session id');
  const { kind, name, outcome } = request;
  if (typeof name !== 'string' || name.length === 0 || name.length > 200)
    throw new InvalidInputError(`Invalid ${kind} name ${JSON.stringify(name)}: use the call id or signal name the session waits for (1 to 200 characters).`);
  if (request.reason !== undefined && (typeof request.reason !== 'string' || request.reason.length > 1000))
    throw new InvalidInputError('Invalid reason: a string of at most 1000 characters.');
  const by = actorOf(request.actor);
  const base = { sessionId, kind, name, outcome };
  try {
    const { events } = await handler.execute(
      sessionId,
      (now, snapshot) => ({
        type: 'resolve',
        now,
        kind,
        name,
        outcome,
        ...(request.reason === undefined ? {} : { reason: request.reason }),
        ...(request.data === undefined ? {} : { data: request.data }),
        ...by,
        continuationInputId: resumeInputId(snapshot.context.waits.find((w) => w.kind === kind && w.name === name)?.executionId ?? 'none'),
      }),
      { fresh: true },
    );
    const resumed = events.find((e) => e.type === 'input.admitted');
    return { ...base, resolved: true, seq: events[0]!.seq, ...(resumed?.type === 'input.admitted' ? { resumeInputId: resumed.payload.inputId } : {}) };
  } catch (err) {
    if (isRefusal(err, 'already_resolved')) {
      const snapshot = handler.cached(sessionId);
      const decided = snapshot && decisionOf(snapshot.context, { type: 'resolve', now: 0, kind, name, outcome, continuationInputId: '' });
      if (decided?.outcome === outcome) return { ...base, resolved: false };
    }
    throw err;
  }
}

/** `approve`, `deny` and `resolve` as a `Sessions` has them (src/sessions/sessions.ts). */
export interface WaitMethods {
  approve(sessionId: string, callId: string, options?: { reason?: string; actor?: string }): Promise<ResolveResult>;
  deny(sessionId: string, callId: string, options?: { reason?: string; actor?: string }): Promise<ResolveResult>;
  resolve(sessionId: string, name: string, options?: { data?: unknown; actor?: string }): Promise<ResolveResult>;
}

/** `approve`, `deny` and `resolve` of a `Sessions`, on one function that resolves a wait. */
export function waitMethods(resolve: (sessionId: string, request: ResolveRequest) => Promise<ResolveResult>): WaitMethods {
  const decide =
    (outcome: 'approved' | 'denied') =>
    (sessionId: string, callId: string, options: { reason?: string; actor?: string } = {}) =>
      resolve(sessionId, {
        kind: 'approval',
        name: callId,
        outcome,
        ...(options.reason === undefined ? {} : { reason: options.reason }),
        ...(options.actor === undefined ? {} : { actor: options.actor }),
      });
  return {
    approve: decide('approved'),
    deny: decide('denied'),
    resolve: (sessionId, name, options = {}) =>
      resolve(sessionId, {
        kind: 'signal',
        name,
        outcome: 'delivered',
        ...(options.data === undefined ? {} : { data: options.data }),
        ...(options.actor === undefined ? {} : { actor: options.actor }),
      }),
  };
}
