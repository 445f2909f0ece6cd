/** `list` over a SQLite projection: the filter checked, the projection brought up to the log's head, one page read. */
import type { EventLog } from '../events/event-log.ts';
import { catchUpProjection } from '../projector/catch-up.ts';
import { listSessionPage } from '../projector/session-list.ts';
import type { Db } from '../storage/sqlite/database.ts';
import { checkListFilter, type ListFilter, type SessionPage } from './list.ts';

export async function listFromProjection(db: Db, log: EventLog, filter?: ListFilter): Promise<SessionPage> {
  const checked = checkListFilter(filter);
  await catchUpProjection(db, log);
  return listSessionPage(db, checked);
}
