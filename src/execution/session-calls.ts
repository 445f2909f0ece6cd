/**
 * A runner's calls into other sessions (`ctx.callSession`): the child input's id, derived from the
 * parent session, its turn and the call's name (a retried or recovered parent admits nothing
 * twice), the call checked, and the refusal of a call that would close a cycle of waits.
 */
import { createHash } from 'node:crypto';
import { ErrorCode, SessiondError } from '../errors.ts';
import { validateId } from '../ids.ts';
import { openWaits, type SessionContext } from '../machines/session-context.ts';
import type { SessionCall } from '../runner/types.ts';

/** The id of the input a session call admits into its child: the same for every execution of the parent's turn. */
export function childInputId(parentSessionId: string, turnId: string, name: string): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([parentSessionId, turnId, name]))
    .digest('hex');
  return `inp_call_${digest.slice(0, 32)}`;
}

/** Checks a call's name and options; throws what was wrong and what to do. */
export function checkSessionCall(parentSessionId: string, name: unknown, call: SessionCall): void {
  const where = `callSession(${JSON.stringify(name)})`;
  if (typeof name !== 'string' || name.length === 0 || name.length > 200)
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `callSession: the name must be a string of 1 to 200 characters (the call's key in the turn), not ${JSON.stringify(name)}.`,
    );
  if (call === null || typeof call !== 'object')
    throw new SessiondError(ErrorCode.InvalidOption, `${where}: pass { sessionId, prompt }, e.g. { sessionId: 'ses_researcher', prompt: 'find ...' }.`);
  validateId(call.sessionId, `${where} sessionId`);
  if (call.sessionId === parentSessionId)
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `${where}: session ${parentSessionId} cannot call itself (it would wait for its own turn forever); call another session.`,
      { details: { chain: [parentSessionId, parentSessionId] } },
    );
  const timeout = call.timeoutMs;
  if (timeout !== undefined && (!Number.isInteger(timeout) || timeout < 1))
    throw new SessiondError(ErrorCode.InvalidOption, `${where}: timeoutMs must be a whole number of milliseconds >= 1, not ${String(timeout)}.`);
}

/** The sessions a session's turn waits for now (its open session calls). */
export function childrenWaitedOn(ctx: SessionContext): string[] {
  return openWaits(ctx).flatMap((w) => (w.kind === 'session' && w.child ? [w.child.sessionId] : []));
}

/** How far a cycle is looked for (sessions visited). */
const MAX_WALK = 1000;

/**
 * Refuses a call from `parent` into `child` when `child` (or a session it waits on, and so on)
 * waits on `parent`: the wait would never end. The error names the chain (`A -> B -> A`).
 */
export async function refuseCycle(load: (sessionId: string) => Promise<SessionContext>, parent: string, child: string): Promise<void> {
  const via = new Map<string, string>([[child, parent]]);
  const queue = [child];
  while (queue.length > 0 && via.size < MAX_WALK) {
    const at = queue.shift()!;
    for (const next of childrenWaitedOn(await load(at))) {
      if (next === parent) {
        const chain = [parent];
        for (let s: string | undefined = at; s !== undefined && s !== parent; s = via.get(s)) chain.splice(1, 0, s);
        chain.push(parent);
        throw new SessiondError(
          ErrorCode.InvalidOption,
          `callSession: session ${parent} cannot call ${child}: ${chain.join(' -> ')} would wait in a cycle (each turn waiting for the next); call a session that does not wait on ${parent}.`,
          { details: { chain } },
        );
      }
      if (!via.has(next)) {
        via.set(next, at);
        queue.push(next);
      }
    }
  }
}
