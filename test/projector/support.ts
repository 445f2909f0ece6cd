/**
 * Helpers for projector tests: a migrated in-memory database, a typical turn, and row readers.
 * Events come from `stream()` in src/testing/fixtures.ts (per-session seq and global position
 * assigned like a log would).
 */
import { openDatabase, type Db } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { Projector } from '../../src/projector/projector.ts';
import type { MessageRow } from '../../src/projector/message-rows.ts';
import type { Stream } from '../../src/testing/fixtures.ts';

export function memoryDb(): Db {
  const db = openDatabase(':memory:');
  migrate(db);
  return db;
}

/** A fresh database with a projector on it. */
export function setup(name?: string) {
  const db = memoryDb();
  const projector = new Projector(db, name === undefined ? {} : { name });
  return { db, projector };
}

export const all = (db: Db, table: string, order = 'rowid') => db.prepare(`SELECT * FROM ${table} ORDER BY ${order}`).all() as Record<string, unknown>[];
export const row = (db: Db, table: string, where: string, ...args: unknown[]) =>
  db.prepare(`SELECT * FROM ${table} WHERE ${where}`).get(...args) as Record<string, unknown> | undefined;
/** A session_message row with `data` parsed. */
export const message = (db: Db, id: string) => {
  const r = db.prepare('SELECT * FROM session_message WHERE id = ?').get(id) as MessageRow | undefined;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read whatever shape the row holds
  // biome-ignore lint/suspicious/noExplicitAny: rows' JSON read by tests field by field
  return r ? { ...r, data: JSON.parse(r.data) as any } : undefined;
};

/** A typical claimed-and-started execution in a session: claim, start, one promoted input. */
export function claimedTurn(s: Stream, sessionId: string, executionId: string, inputId: string) {
  return [
    s.ev(sessionId, 'input.admitted', { inputId, prompt: `prompt ${inputId}`, delivery: 'queue', wake: true }),
    s.ev(sessionId, 'execution.claimed', { executionId, ownerId: 'own_a', expiresAt: 30_000, leaseMs: 30_000, assistantSeq: -1 }),
    s.ev(sessionId, 'execution.started', { executionId }),
    s.ev(sessionId, 'input.promoted', { inputId, executionId }),
  ];
}

/** Every projection table, empty: what a projection holds before anything is folded (or after a batch rolled back). */
export const EMPTY_PROJECTION = {
  session_execution: [],
  session_input: [],
  session_message: [],
  session_recovery: [],
  session_wait: [],
  session: [],
  session_tag: [],
  session_blob: [],
};
