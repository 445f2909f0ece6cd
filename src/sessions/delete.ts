/**
 * Deleting a session (GDPR erasure, retention) from a SQLite database: a turn in progress or a turn
 * that waits is cancelled first (its owner stops as cancelled; its waits end), then its events, rows,
 * snapshot and inputs go in one transaction with one audit row (who, when, why, how many events;
 * never the content). The id may be used again afterwards: it starts a new session from sequence 1.
 */
import type { Clock } from '../clock.ts';
import { ErrorCode, SessiondError } from '../errors.ts';
import { validateId } from '../ids.ts';
import type { CommandHandler } from '../execution/command-handler.ts';
import { cancelExecution } from '../execution/cancel.ts';
import { openWaits } from '../machines/session-context.ts';
import { deleteSessionData, type DeletionRecord } from '../storage/sqlite/delete-session.ts';
import type { Db } from '../storage/sqlite/database.ts';
import { unknownSession } from './status.ts';

export type { DeletionRecord };

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

export async function deleteSession(
  handler: CommandHandler,
  db: Db,
  clock: Clock,
  sessionId: string,
  options: DeleteOptions = {},
  /** After a cancel, before the delete (an engine waits there for its own runner to stop). */
  afterCancel: () => Promise<void> = async () => {},
): Promise<DeletionRecord> {
  validateId(sessionId, 'session id');
  const by = checkDeleteOptions(options);
  await cancelBeforeDelete(handler, sessionId, options, afterCancel);
  const record = deleteSessionData(db, sessionId, { now: clock.now(), by, reason: options.reason, archivedTo: options.archivedTo });
  handler.forget(sessionId); // this process decides the id's next commands from the log, which no longer has it
  return record;
}
