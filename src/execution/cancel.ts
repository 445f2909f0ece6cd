/**
 * Cancelling a session's execution in progress: the decision on a fresh read of the log, and what it
 * says. The execution service adds aborting a runner here; a log at rest (`logSessions`) only decides.
 * A cancel cascades to the turns the cancelled turn waits for (its session calls): each child's turn
 * that runs the call's input is cancelled with the reason (or the input dropped, not yet run), and
 * so on down. The cascade is done by whoever cancels, after the parent's cancel is in the log.
 */
import { isRefusal } from '../errors.ts';
import { validateId } from '../ids.ts';
import type { CommandHandler } from './command-handler.ts';
import { actorOf, type ActorOptions } from '../sessions/actor.ts';
import type { Refusal } from '../machines/commands.ts';
import { openWaits } from '../machines/session-context.ts';
import { dropPending } from '../input/drop.ts';

/** What a cancel did: the execution cancelled, or why nothing was (`nothing_to_cancel`). */
export type CancelResult = { cancelled: true; executionId: string } | { cancelled: false; reason: Refusal; message: string };

/** Cancels one child's execution (the execution service's own `cancel`, which also stops a runner it runs). */
export type CancelChild = (sessionId: string, reason: string, executionId: string) => Promise<unknown>;

export async function cancelExecution(
  handler: CommandHandler,
  sessionId: string,
  reason?: string,
  executionId?: string,
  options: ActorOptions = {},
  cancelChild: CancelChild = (child, why, exec) => cancelExecution(handler, child, why, exec, options),
): Promise<CancelResult> {
  validateId(sessionId, 'session id');
  const by = actorOf(options.actor);
  if (executionId !== undefined) validateId(executionId, 'execution id');
  let children: { sessionId: string; inputId: string }[] = [];
  let result: CancelResult;
  try {
    const { events } = await handler.execute(
      sessionId,
      (now, snapshot) => {
        children = openWaits(snapshot.context).flatMap((w) => (w.kind === 'session' && w.child ? [w.child] : []));
        return { type: 'cancel', now, ...(reason ? { reason } : {}), ...(executionId ? { executionId } : {}), ...by };
      },
      { fresh: true },
    );
    result = { cancelled: true, executionId: (events[0] as { payload: { executionId: string } }).payload.executionId };
  } catch (err) {
    if (isRefusal(err)) return { cancelled: false, reason: err.reason, message: err.message };
    throw err;
  }
  const why = `its caller ${sessionId} was cancelled${reason ? `: ${reason}` : ''}`.slice(0, 1000);
  for (const child of children) await cancelChildTurn(handler, child, why, options, cancelChild);
  return result;
}

/** Cancels the child's turn that runs `inputId`, or drops the input when no turn has taken it yet; a turn already over is left. */
async function cancelChildTurn(
  handler: CommandHandler,
  child: { sessionId: string; inputId: string },
  reason: string,
  options: ActorOptions,
  cancelChild: CancelChild,
): Promise<void> {
  const ctx = (await handler.load(child.sessionId)).context; // load catches up with the log
  if (ctx.pending.some((p) => p.inputId === child.inputId)) {
    await dropPending(handler, child.sessionId, { inputIds: [child.inputId], reason, ...options });
    return;
  }
  const exec = ctx.execution;
  if (exec?.turnId === child.inputId) await cancelChild(child.sessionId, reason, exec.id);
}
