/**
 * The last sequence each recently written session has, as committed through one connection, and the
 * connection's `PRAGMA data_version` inside that commit's transaction. While data_version still reads
 * the same, no other connection has committed since (it changes only for other connections'
 * commits), so the session's last sequence is the one kept: a read after it returns at once and an
 * append expecting it needs no read of the session's last batch (sqlite-event-log.ts). Shared by everything that writes the
 * event log through the connection: a deletion or an import forgets what it changes.
 */
import type { Db } from './database.ts';

/** Sessions whose last committed sequence a connection remembers. */
const KEPT = 8192;

export interface SessionTail {
  seq: number;
  version: number;
  /** The ids of the session's last append (an append reusing one is refused). */
  ids: readonly string[];
}

export interface SessionTails {
  /** The tail kept for the session, if any (whether it still holds is the caller's data_version check). */
  get(sessionId: string): SessionTail | undefined;
  remember(sessionId: string, seq: number, version: number, ids: readonly string[]): void;
  /** The session's events changed through this connection other than by an append (deleted). */
  forget(sessionId: string): void;
  /** Events were written through this connection other than by appends (an import). */
  forgetAll(): void;
}

const tailsOf = new WeakMap<Db, SessionTails>();

export function sessionTails(db: Db): SessionTails {
  let tails = tailsOf.get(db);
  if (tails) return tails;
  const kept = new Map<string, SessionTail>();
  tails = {
    get: (sessionId) => kept.get(sessionId),
    remember(sessionId, seq, version, ids) {
      kept.delete(sessionId); // (re)inserted last: the map's order is the eviction order
      kept.set(sessionId, { seq, version, ids });
      if (kept.size > KEPT) kept.delete(kept.keys().next().value!);
    },
    forget: (sessionId) => kept.delete(sessionId),
    forgetAll: () => kept.clear(),
  };
  tailsOf.set(db, tails);
  return tails;
}
