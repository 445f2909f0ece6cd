/**
 * What status says of a session whose model call waits for room (pure): the oldest waiting call of
 * the session in the deployment's view, and the limits it draws from.
 */
import type { CapacityWait } from '../sessions/sessions.ts';
import type { CapacityView } from './gate.ts';

export function waitingFor(view: CapacityView, sessionId: string): CapacityWait | undefined {
  const mine = view.waiting.filter((w) => w.sessionId === sessionId).sort((a, b) => a.since - b.since)[0];
  if (!mine) return undefined;
  return { since: mine.since, limits: view.limits.filter((l) => mine.scopes.includes(l.scope)) };
}

/** A waiting call in plain words: `waiting for room since 12:00:01: model:gpt-4o 2 of 2 in flight, 5 waiting`. */
export function describeCapacityWait(wait: CapacityWait, time: (ms: number) => string): string {
  const limits = wait.limits.map((l) => `${l.scope} ${l.inFlight} of ${l.limit} in flight, ${l.waiting} waiting`).join('; ');
  return `a model call waits for room since ${time(wait.since)}${limits ? `: ${limits}` : ''}`;
}
