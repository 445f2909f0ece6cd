/**
 * A page of session ids, newest first, from a database opened read-only (`sessiond status` on a
 * SQLite file): the projection's rows plus the sessions in the part of the log it has not folded yet,
 * in `list`'s order and cursor, so a page costs the page and the projection's lag.
 */
import type { EventLog } from '../events/event-log.ts';
import type { Db } from '../storage/sqlite/database.ts';
import { encodeCursor, type Cursor } from '../sessions/list.ts';
import { DEFAULT_PROJECTOR_NAME } from './projector.ts';

export interface IdPage {
  ids: string[];
  /** The cursor of the next page, or null on the last. */
  next: string | null;
}

interface Created {
  id: string;
  time: number;
}

const newerFirst = (a: Created, b: Created) => b.time - a.time || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
const before = (c: Created, after: Cursor | undefined) => !after || newerFirst(c, { id: after.id, time: after.time }) > 0;

export async function sessionPageAtRest(db: Db, log: EventLog, page: { limit: number; after?: Cursor }): Promise<IdPage> {
  const { checkpoint, folded } = db.transaction(() => projected(db, page))();
  // sessions the projection has not seen yet: their first event lies past its checkpoint
  const fresh = new Map<string, Created>();
  for await (const events of log.readPages({ after: checkpoint }))
    for (const e of events) if (e.seq === 1 && before({ id: e.sessionId, time: e.time }, page.after)) fresh.set(e.sessionId, { id: e.sessionId, time: e.time });
  const merged = [...folded.filter((c) => !fresh.has(c.id)), ...fresh.values()].sort(newerFirst).slice(0, page.limit + 1);
  const shown = merged.slice(0, page.limit);
  const last = shown[shown.length - 1];
  return { ids: shown.map((c) => c.id), next: merged.length > page.limit && last ? encodeCursor(last) : null };
}

/** The projection's checkpoint and its newest `limit + 1` sessions after the cursor (none before migration 011). */
function projected(db: Db, page: { limit: number; after?: Cursor }): { checkpoint: number; folded: Created[] } {
  const listed = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'session'").get() !== undefined;
  if (!listed) return { checkpoint: 0, folded: [] };
  const checkpoint = (db.prepare('SELECT position FROM projector_checkpoint WHERE name = ?').pluck().get(DEFAULT_PROJECTOR_NAME) as number | undefined) ?? 0;
  const rows = (
    page.after
      ? db
          .prepare(`SELECT session_id AS id, time_created AS time FROM session WHERE (time_created, session_id) < (?, ?)
                    ORDER BY time_created DESC, session_id DESC LIMIT ?`)
          .all(page.after.time, page.after.id, page.limit + 1)
      : db.prepare('SELECT session_id AS id, time_created AS time FROM session ORDER BY time_created DESC, session_id DESC LIMIT ?').all(page.limit + 1)
  ) as Created[];
  return { checkpoint, folded: rows };
}
