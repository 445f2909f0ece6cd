/**
 * Helpers for projector tests: a migrated in-memory database, a builder of committed events
 * (per-session seq and global position assigned like a log would), and row readers.
 */
import * as assert from 'uvu/assert';
import { openDatabase, type Db } from '../../src/storage/sqlite.ts';
import { migrate } from '../../src/storage/migrate.ts';
import type { EventType, PayloadInputOf } from '../../src/events/catalog.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { isSessiondError, type ErrorCode } from '../../src/errors.ts';
import { Projector } from '../../src/projector/projector.ts';
import type { MessageRow } from '../../src/projector/message-rows.ts';

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

/**
 * Builds committed events: `ev(session, type, payload)` gives the next seq of that session and the
 * next global position; time defaults to 1000 * position. Build a whole stream first, then apply
 * it in any batches.
 */
export function stream() {
  let position = 0;
  let n = 0;
  const seqs = new Map<string, number>();
  return {
    ev<T extends EventType>(sessionId: string, type: T, payload: PayloadInputOf<T>, options: { time?: number } = {}): SessionEvent<T> {
      const seq = (seqs.get(sessionId) ?? 0) + 1;
      seqs.set(sessionId, seq);
      position++;
      return { id: `evt_${++n}`, type, version: 1, sessionId, seq, time: options.time ?? 1000 * position, payload, position } as SessionEvent<T>;
    },
  };
}

export const all = (db: Db, table: string, order = 'rowid') => db.prepare(`SELECT * FROM ${table} ORDER BY ${order}`).all() as Record<string, unknown>[];
export const row = (db: Db, table: string, where: string, ...args: unknown[]) => db.prepare(`SELECT * FROM ${table} WHERE ${where}`).get(...args) as Record<string, unknown> | undefined;
/** A session_message row with `data` parsed. */
export const message = (db: Db, id: string) => {
  const r = db.prepare('SELECT * FROM session_message WHERE id = ?').get(id) as MessageRow | undefined;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read whatever shape the row holds
  return r ? { ...r, data: JSON.parse(r.data) as any } : undefined;
};

/** Asserts `fn` throws a SessiondError with `code` and returns it. */
export function throwsCode(fn: () => unknown, code: ErrorCode, includes?: string): Error & { code: ErrorCode; cause?: unknown } {
  try {
    fn();
  } catch (err) {
    assert.ok(isSessiondError(err, code), `expected ${code}, got ${(err as { code?: string }).code}: ${(err as Error).message}`);
    if (includes) assert.ok((err as Error).message.includes(includes), `message "${(err as Error).message}" should include "${includes}"`);
    return err as Error & { code: ErrorCode };
  }
  assert.unreachable(`expected an error with code ${code}`);
  throw new Error('unreachable');
}

/** A typical claimed-and-started execution in a session: claim, start, one promoted input. */
export function claimedTurn(s: ReturnType<typeof stream>, sessionId: string, executionId: string, inputId: string) {
  return [
    s.ev(sessionId, 'input.admitted', { inputId, prompt: `prompt ${inputId}`, delivery: 'queue', wake: true }),
    s.ev(sessionId, 'execution.claimed', { executionId, ownerId: 'own_a', expiresAt: 30_000, leaseMs: 30_000, assistantSeq: -1 }),
    s.ev(sessionId, 'execution.started', { executionId }),
    s.ev(sessionId, 'input.promoted', { inputId, executionId }),
  ];
}
