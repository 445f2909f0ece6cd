/**
 * Cancelling a session's execution in progress: the decision on a fresh read of the log, and what it
 * says. The execution service adds aborting a runner here; a log at rest (`logSessions`) only decides.
 */
import { isRefusal } from '../errors.ts';
import { validateId } from '../ids.ts';
import type { CommandHandler } from './command-handler.ts';
import { actorOf, type ActorOptions } from '../sessions/actor.ts';
import type { Refusal } from '../machines/commands.ts';

/** What a cancel did: the execution cancelled, or why nothing was (`nothing_to_cancel`). */
export type CancelResult = { cancelled: true; executionId: string } | { cancelled: false; reason: Refusal; message: string };

export async function cancelExecution(
  handler: CommandHandler,
  sessionId: string,
  reason?: string,
  executionId?: string,
  options: ActorOptions = {},
): Promise<CancelResult> {
  validateId(sessionId, 'session id');
  const by = actorOf(options.actor);
  if (executionId !== undefined) validateId(executionId, 'execution id');
  try {
    const { events } = await handler.execute(
      sessionId,
      (now) => ({ type: 'cancel', now, ...(reason ? { reason } : {}), ...(executionId ? { executionId } : {}), ...by }),
      { fresh: true },
    );
    return { cancelled: true, executionId: (events[0] as { payload: { executionId: string } }).payload.executionId };
  } catch (err) {
    if (isRefusal(err)) return { cancelled: false, reason: err.reason, message: err.message };
    throw err;
  }
}
