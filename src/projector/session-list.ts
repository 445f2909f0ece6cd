/**
 * A page of sessions from the projection (`session`, `session_tag`), newest first, keyset-paged, each
 * filter driven by its own index so the 1,000th page costs what the first does (why:
 * docs/architecture.md#design-notes-the-projector).
 */
import type { Db } from '../storage/sqlite/database.ts';
import { encodeCursor, type CheckedFilter, type SessionListItem, type SessionPage } from '../sessions/list.ts';
import type { SessionRow } from './session-rows.ts';

const statements = new WeakMap<Db, Map<string, ReturnType<Db['prepare']>>>();

/** Most sessions of an id prefix read by its key range and sorted; beyond, the page walks the order's index. */
export const PREFIX_SORTED = 2000;

export function listSessionPage(db: Db, filter: CheckedFilter): SessionPage {
  const { sql, args } = query(filter, prefixRead(db, filter));
  const rows = prepared(db, sql).all([...args, filter.limit + 1]) as ListedRow[];
  const more = rows.length > filter.limit;
  const page = more ? rows.slice(0, filter.limit) : rows;
  const last = page[page.length - 1];
  return { sessions: page.map(toItem), next: more && last ? encodeCursor({ time: last.time_created, id: last.session_id }) : null };
}

/** SQLite's plan for a filter's query, one line per step (what test/sessions/list.test.ts holds to an index). */
export function listSessionPlan(db: Db, filter: CheckedFilter): string[] {
  const { sql, args } = query(filter, prefixRead(db, filter));
  return (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all([...args, filter.limit + 1]) as { detail: string }[]).map((r) => r.detail);
}

type PrefixRead = 'key range' | 'order index';

/** How an id prefix is read: by its key range when it holds few sessions (counted up to PREFIX_SORTED + 1, a bounded read of the key). */
function prefixRead(db: Db, filter: CheckedFilter): PrefixRead {
  if (filter.idPrefix === undefined) return 'order index';
  const held = prepared(db, 'SELECT count(*) AS n FROM (SELECT 1 FROM session WHERE session_id >= ? AND session_id < ? LIMIT ?)').get([
    ...prefixRange(filter.idPrefix),
    PREFIX_SORTED + 1,
  ]) as { n: number };
  return held.n <= PREFIX_SORTED ? 'key range' : 'order index';
}

/** Every id starting with the prefix, and no other, sorts in [prefix, prefix + DEL): an id holds only ASCII below DEL. */
const prefixRange = (prefix: string): [string, string] => [prefix, `${prefix}\x7f`];

function query(filter: CheckedFilter, read: PrefixRead): { sql: string; args: unknown[] } {
  const where: string[] = [];
  const args: unknown[] = [];
  const [first, ...more] = filter.tags;
  // the table the page is ordered by: the first tag's rows (its index holds the order), or the sessions
  const by = first ? 't0' : 's';
  let from = 'session s';
  if (first) {
    from = 'session_tag t0 JOIN session s ON s.session_id = t0.session_id';
    where.push('t0.key = ? AND t0.value = ?');
    args.push(first[0], first[1]);
  }
  for (const [key, value] of more) {
    where.push('EXISTS (SELECT 1 FROM session_tag t WHERE t.session_id = s.session_id AND t.key = ? AND t.value = ?)');
    args.push(key, value);
  }
  if (filter.idPrefix !== undefined) {
    // unary + keeps SQLite off the key for this term, so the page walks an index in its order
    where.push(read === 'key range' ? 's.session_id >= ? AND s.session_id < ?' : '+s.session_id >= ? AND +s.session_id < ?');
    args.push(...prefixRange(filter.idPrefix));
  }
  if (filter.state !== undefined) {
    where.push('s.state = ?');
    args.push(filter.state);
  }
  if (filter.waiting !== undefined) where.push(filter.waiting ? 's.waiting = 1' : 's.waiting = 0'); // literal: the partial index applies
  if (filter.reachableBy !== undefined) {
    where.push('(s.owned_by IS NULL OR s.owned_by = ?)');
    args.push(filter.reachableBy);
  }
  if (filter.calledBy !== undefined) {
    where.push('s.called_by = ?');
    args.push(filter.calledBy);
  }
  if (filter.updatedSince !== undefined) {
    where.push('s.time_updated >= ?');
    args.push(filter.updatedSince);
  }
  if (filter.after) {
    where.push(`(${by}.time_created, ${by}.session_id) < (?, ?)`);
    args.push(filter.after.time, filter.after.id);
  }
  const children = '(SELECT count(*) FROM session c WHERE c.called_by = s.session_id) AS child_count';
  const sql = `SELECT s.*, ${children} FROM ${from} ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
               ORDER BY ${by}.time_created DESC, ${by}.session_id DESC LIMIT ?`;
  return { sql, args };
}

/** One statement per query shape (a handful: which filters are present), prepared once per database. */
function prepared(db: Db, sql: string) {
  let cache = statements.get(db);
  if (!cache) statements.set(db, (cache = new Map()));
  let s = cache.get(sql);
  if (!s) cache.set(sql, (s = db.prepare(sql)));
  return s;
}

type ListedRow = SessionRow & { child_count: number };

function toItem(r: ListedRow): SessionListItem {
  return {
    sessionId: r.session_id,
    state: r.state,
    waiting: r.waiting === 1,
    pendingInputs: r.pending_inputs,
    seq: r.last_seq,
    createdAt: r.time_created,
    updatedAt: r.time_updated,
    tags: JSON.parse(r.tags) as SessionListItem['tags'],
    forkedFrom: r.forked_from === null ? null : { sessionId: r.forked_from, seq: r.forked_seq ?? 0 },
    ownedBy: r.owned_by ?? null,
    calledBy: r.called_by ?? null,
    childCount: r.child_count,
  };
}
