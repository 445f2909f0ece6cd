/**
 * A stored projection against the one the current projector folds from the same log, per session:
 * every current table with a `session_id` column (but those below), on the columns both databases
 * have, rows paired by key (primary key, else the first unique index, else the whole row); each table
 * is read once per database, ordered by session, and merged.
 */
import { preview } from '../events/codec.ts';
import type { Db } from '../storage/sqlite/database.ts';
import { firstDifference } from './first-difference.ts';
import type { Problem } from './problems.ts';

/** Tables with a session_id that the projector does not write. */
const NOT_FOLDED = new Set([
  'session_snapshot',
  'inspector_checkpoint',
  'inspector_mark',
  'inspector_head',
  'inspector_timeline',
  'quarantined_message',
  'session_deletion',
]);

type Row = Record<string, unknown>;
interface Table {
  name: string;
  columns: string[];
  key: string[];
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

function columnsOf(db: Db, table: string): { name: string; pk: number }[] {
  return db.prepare(`PRAGMA table_info(${quote(table)})`).all() as { name: string; pk: number }[];
}

/** The projection tables of the current schema, with the columns the stored database has too. */
export function comparableTables(stored: Db, scratch: Db): Table[] {
  const names = scratch.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[];
  const out: Table[] = [];
  for (const name of names) {
    const mine = columnsOf(scratch, name);
    if (NOT_FOLDED.has(name) || !mine.some((c) => c.name === 'session_id')) continue;
    const theirs = new Set(columnsOf(stored, name).map((c) => c.name));
    if (theirs.size === 0) continue; // the stored schema has no such table yet
    const columns = mine.map((c) => c.name).filter((c) => theirs.has(c));
    const pk = mine
      .filter((c) => c.pk > 0)
      .sort((a, b) => a.pk - b.pk)
      .map((c) => c.name);
    const within = pk.filter((c) => c !== 'session_id'); // (session_id, id): the id; (session_id): one row per session
    const key = (within.length > 0 ? within : pk.length > 0 ? pk : (uniqueKey(scratch, name) ?? columns)).filter((c) => theirs.has(c));
    out.push({ name, columns, key: key.length > 0 ? key : columns });
  }
  return out;
}

function uniqueKey(db: Db, table: string): string[] | undefined {
  const indexes = db.prepare(`PRAGMA index_list(${quote(table)})`).all() as { name: string; unique: number }[];
  const idx = indexes.find((i) => i.unique === 1);
  if (!idx) return undefined;
  return (db.prepare(`PRAGMA index_info(${quote(idx.name)})`).all() as { name: string }[]).map((c) => c.name);
}

/** A table's rows grouped by session, sessions in SQLite's (byte) order. */
function* groups(db: Db, t: Table): Generator<[string, Row[]]> {
  const cols = t.columns.map(quote).join(', ');
  const order = ['session_id', ...t.key].map(quote).join(', ');
  let current: string | undefined;
  let rows: Row[] = [];
  for (const row of db.prepare(`SELECT ${cols} FROM ${quote(t.name)} ORDER BY ${order}`).iterate() as Iterable<Row>) {
    const id = String(row.session_id);
    if (current !== undefined && id !== current) {
      yield [current, rows];
      rows = [];
    }
    current = id;
    rows.push(row);
  }
  if (current !== undefined) yield [current, rows];
}

const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** Two column values equal, or JSON texts of equal data (an older writer's key order). */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  if (typeof a !== 'string' || typeof b !== 'string') return false;
  try {
    return firstDifference(JSON.parse(a), JSON.parse(b)) === undefined;
  } catch {
    return false;
  }
}

/** The row's own sequence, where it has one (a message's seq, an input's admission). */
function seqOfRow(row: Row | undefined): number | undefined {
  if (!row) return undefined;
  for (const c of ['seq', 'admitted_seq', 'last_seq']) if (typeof row[c] === 'number') return row[c] as number;
  return undefined;
}

/** Why a session's rows of one table differ, or undefined when they agree. */
function compareGroup(t: Table, stored: Row[], folded: Row[], fallbackSeq: number): Problem | undefined {
  const keyOf = (r: Row) => JSON.stringify(t.key.map((k) => r[k]));
  const describeKey = (r: Row) => t.key.map((k) => `${k}=${preview(r[k], 60)}`).join(' ');
  const mine = new Map(folded.map((r) => [keyOf(r), r]));
  const problem = (row: Row, reason: string): Problem => ({ kind: 'projection_differs', seq: seqOfRow(row) ?? fallbackSeq, reason: `${t.name}: ${reason}` });
  for (const s of stored) {
    const f = mine.get(keyOf(s));
    if (!f) return problem(s, `the stored row ${describeKey(s)} is not in what the current projector folds from the log`);
    const column = t.columns.find((c) => !sameValue(s[c], f[c]));
    if (column) return problem(s, `row ${describeKey(s)}: stored ${column} ${preview(s[column])}, the current projector folds ${preview(f[column])}`);
    mine.delete(keyOf(s));
  }
  const missing = mine.values().next().value;
  if (missing) return problem(missing, `the current projector folds a row ${describeKey(missing)} that the stored projection lacks`);
  return undefined;
}

/**
 * Per session, the first difference of each projection table. `include(session)` says which
 * sessions to compare (those the scratch folded whole); `lastSeq(session)` is the sequence to name
 * for a row without one of its own.
 */
export function compareProjections(
  stored: Db,
  scratch: Db,
  include: (sessionId: string) => boolean,
  lastSeq: (sessionId: string) => number,
): Map<string, Problem[]> {
  const out = new Map<string, Problem[]>();
  const add = (id: string, p: Problem) => {
    const list = out.get(id);
    if (list) list.push(p);
    else out.set(id, [p]);
  };
  for (const t of comparableTables(stored, scratch)) {
    const a = groups(stored, t);
    const b = groups(scratch, t);
    let x = a.next();
    let y = b.next();
    while (!x.done || !y.done) {
      const order = x.done ? 1 : y.done ? -1 : byteOrder(x.value[0], y.value[0]);
      const id = order <= 0 ? x.value![0] : y.value![0];
      const storedRows = order <= 0 ? x.value![1] : [];
      const foldedRows = order >= 0 ? y.value![1] : [];
      if (include(id)) {
        const p = compareGroup(t, storedRows, foldedRows, lastSeq(id));
        if (p) add(id, p);
      }
      if (order <= 0) x = a.next();
      if (order >= 0) y = b.next();
    }
  }
  return out;
}
