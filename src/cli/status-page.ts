/**
 * What `sessiond status` shows without a session: a page of sessions, newest first (as `ls` orders
 * them), each one's whole status, and the cursor of the next page. Never the whole log: with
 * `--nats` a worker lists them from its projection (the `list` command) and answers each status
 * (both commands the client user may send); on a SQLite file the page is read from the projection at
 * rest, read-only, and each session folded from its own events.
 */
import { ErrorCode, isSessiondError } from '../errors.ts';
import { checkListFilter, type Cursor } from '../sessions/list.ts';
import type { SessionStatus, Sessions } from '../sessions/sessions.ts';
import { logSessions } from '../sessions/log-sessions.ts';
import { SessiondClient } from '../client/client.ts';
import { sessionPageAtRest } from '../projector/session-page-at-rest.ts';
import type { CliContext } from './context.ts';
import { describeNats, natsConnectionOptions } from './nats-options.ts';
import { openLog, type LogOptions } from './log-options.ts';

/** Sessions `status` shows per page unless `--limit` says otherwise (each is several lines). */
export const DEFAULT_STATUS_PAGE = 20;

/** Status requests in flight at once over NATS. */
const CONCURRENT_STATUSES = 8;

export interface StatusPage {
  statuses: SessionStatus[];
  /** The cursor of the next page (`--after`), or null on the last. */
  next: string | null;
  /** Where the sessions are, for messages. */
  describe: string;
}

export async function statusPage(opts: LogOptions, ctx: CliContext, page: { limit?: number; after?: string }): Promise<StatusPage> {
  const checked = checkListFilter({ limit: page.limit ?? DEFAULT_STATUS_PAGE, ...(page.after === undefined ? {} : { after: page.after }) });
  const nats = natsConnectionOptions(opts, ctx, 'sessiond-status');
  if (nats) {
    const client = await SessiondClient.connect({ connection: nats });
    try {
      const listed = await client.list({ limit: checked.limit, ...(page.after === undefined ? {} : { after: page.after }) });
      const ids = listed.sessions.map((s) => s.sessionId);
      return { statuses: await statusesOf(client, ids), next: listed.next, describe: `NATS ${describeNats(nats)}` };
    } finally {
      await client.close();
    }
  }
  const opened = await openLog(opts, ctx, { readonly: true });
  try {
    const at = { limit: checked.limit, ...(checked.after ? { after: checked.after as Cursor } : {}) };
    const { ids, next } = await sessionPageAtRest(opened.db!, opened.log, at);
    return { statuses: await statusesOf(logSessions(opened.log), ids), next, describe: opened.describe };
  } finally {
    await opened.close();
  }
}

/** Each listed session's status, in the list's order; one deleted since it was listed is left out. */
async function statusesOf(sessions: Pick<Sessions, 'status'>, ids: string[]): Promise<SessionStatus[]> {
  const found: (SessionStatus | undefined)[] = new Array(ids.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < ids.length; i = next++) {
      found[i] = await sessions.status(ids[i]!).catch((err: unknown) => {
        if (isSessiondError(err) && err.code === ErrorCode.NotFound) return undefined;
        throw err;
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENT_STATUSES, ids.length) }, worker));
  return found.filter((s): s is SessionStatus => s !== undefined);
}
