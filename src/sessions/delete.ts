/**
 * Deleting a session (GDPR erasure, retention), on any log: the log's eraser checks it can finish, a
 * turn in progress or a turn that waits is cancelled first (its owner stops as cancelled; its waits
 * end), then the eraser erases the session and records who, when, why and how many events (never the
 * content). The id may be used again afterwards: it starts a new session from sequence 1.
 */
import { ErrorCode, SessiondError } from '../errors.ts';
import { validateId } from '../ids.ts';
import type { CommandHandler } from '../execution/command-handler.ts';
import { cancelExecution } from '../execution/cancel.ts';
import { openWaits } from '../machines/session-context.ts';
import type { DeletionRecord } from '../storage/sqlite/delete-session.ts';
import type { SessionEraser } from './session-eraser.ts';
import { unknownSession } from './status.ts';

export type { DeletionRecord };
export type { Erasure, SessionEraser } from './session-eraser.ts';

export interface DeleteOptions {
  /** Who deletes (recorded in the audit row); default `api`. */
  by?: string;
  /** Why (recorded; at most 1,000 characters). */
  reason?: string;
  /** Where the session was exported first (recorded). */
  archivedTo?: string;
}

/** Checks the options of a delete; returns who deletes. */
export function checkDeleteOptions(options: DeleteOptions): string {
  const by = options.by ?? 'api';
  if (typeof by !== 'string' || by.length === 0 || by.length > 200)
    throw new SessiondError(ErrorCode.InvalidOption, 'Invalid delete option by: say who deletes in 1 to 200 characters (e.g. "ops@example.com").');
  if (options.reason !== undefined && (typeof options.reason !== 'string' || options.reason.length > 1000))
    throw new SessiondError(ErrorCode.InvalidOption, 'Invalid delete option reason: at most 1,000 characters.');
  return by;
}

/**
 * The first step of a delete, on any log: refuses an unknown session, and cancels a running or
 * waiting turn (its owner, in any process, sees the cancel and stops writing).
 */
export async function cancelBeforeDelete(
  handler: CommandHandler,
  sessionId: string,
  options: DeleteOptions,
  afterCancel: () => Promise<void> = async () => {},
): Promise<void> {
  if ((await handler.log.lastSeq(sessionId)) === 0) throw unknownSession(sessionId, 'delete');
  handler.forget(sessionId); // a cached snapshot may be of an earlier session of this id
  const snapshot = await handler.load(sessionId);
  const exec = snapshot.context.execution;
  if ((exec !== null && exec.outcome === null) || openWaits(snapshot.context).length > 0) {
    // the running turn (or the waiting one) ends first: its owner sees the cancel and stops writing
    // who deletes is who cancels (when it is text an actor may be)
    const by = options.by ?? 'api';
    const actor = /^[^\u0000-\u001f\u007f]{1,200}$/.test(by) ? { actor: by } : {};
    await cancelExecution(handler, sessionId, `the session is being deleted${options.reason ? `: ${options.reason}` : ''}`, undefined, actor);
    await afterCancel();
  }
}

/**
 * Deletes the session through the log's eraser: checks the id and the options, lets the eraser refuse
 * before anything is cancelled, cancels a running or waiting turn, erases, and forgets the cached
 * state (the id's next commands are decided from the log, which no longer has it). Returns the record.
 */
export async function deleteSession<R extends DeletionRecord>(
  handler: CommandHandler,
  eraser: SessionEraser<R>,
  sessionId: string,
  options: DeleteOptions = {},
  /** After a cancel, before the erase (an engine waits there for its own runner to stop). */
  afterCancel: () => Promise<void> = async () => {},
): Promise<R> {
  validateId(sessionId, 'session id');
  const by = checkDeleteOptions(options);
  await eraser.check();
  await cancelBeforeDelete(handler, sessionId, options, afterCancel);
  try {
    return await eraser.erase(sessionId, { by, reason: options.reason, archivedTo: options.archivedTo });
  } finally {
    handler.forget(sessionId);
  }
}
