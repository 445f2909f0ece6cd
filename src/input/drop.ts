/**
 * Dropping pending inputs: an operator unblocks a session by dropping what waits in it, unrun
 * (`sessiond cancel --pending`). One `input.dropped` event names every input dropped; a
 * continuation of an interrupted turn is never dropped (it finishes work already begun, and the
 * recovery sweep owes its wake); cancel the turn it continues instead.
 */
import { validateId } from '../ids.ts';
import type { CommandHandler } from '../execution/command-handler.ts';
import { isRefusal } from '../errors.ts';
import { actorOf } from '../sessions/actor.ts';

export interface DropPendingRequest {
  /** Drop only these inputs (default: every input the session's users admitted and that still waits). */
  inputIds?: string[];
  /** Why, recorded with the drop. */
  reason?: string;
  /** Who drops them, recorded with the drop. */
  actor?: string;
}

export interface DropPendingResult {
  sessionId: string;
  /** The inputs dropped (none when nothing matching was pending). */
  dropped: string[];
  /** Sequence of the `input.dropped` event (absent when nothing was dropped). */
  seq?: number;
}

export async function dropPending(handler: CommandHandler, sessionId: string, request: DropPendingRequest = {}): Promise<DropPendingResult> {
  validateId(sessionId, 'session id');
  for (const id of request.inputIds ?? []) validateId(id, 'input id');
  const by = actorOf(request.actor);
  try {
    const { events } = await handler.execute(
      sessionId,
      (now) => ({
        type: 'dropPending',
        now,
        ...(request.inputIds ? { inputIds: request.inputIds } : {}),
        ...(request.reason ? { reason: request.reason } : {}),
        ...by,
      }),
      { fresh: true },
    );
    const dropped = events[0]!;
    return { sessionId, dropped: dropped.type === 'input.dropped' ? dropped.payload.inputIds : [], seq: dropped.seq };
  } catch (err) {
    if (isRefusal(err, 'nothing_to_drop')) return { sessionId, dropped: [] };
    throw err;
  }
}
