/**
 * Work that commits with the events: a hook registered on a connection runs inside every group
 * transaction an SqliteEventLog on that connection commits, after its appends are written, with the
 * events of the group in position order (as a reader of the file gets them). Each hook runs in a
 * savepoint of its own: one that throws is rolled back alone, and the appends still commit. The
 * whole worker's projector uses it to write its rows and checkpoint in the appends' transaction
 * (Projector.follow with `inline`), so a turn's appends and projection commit once.
 */
import type { SessionEvent } from '../../events/envelope.ts';
import type { Db } from './database.ts';

export type CommitHook = (events: readonly SessionEvent[]) => void;

const hooksOf = new WeakMap<Db, Set<CommitHook>>();

/** Registers `hook` on `db`'s connection; returns the function that removes it. */
export function onCommit(db: Db, hook: CommitHook): () => void {
  let hooks = hooksOf.get(db);
  if (!hooks) hooksOf.set(db, (hooks = new Set()));
  hooks.add(hook);
  return () => {
    hooks.delete(hook);
  };
}

/** The hooks registered on `db` (none: an empty set). */
export function commitHooks(db: Db): ReadonlySet<CommitHook> {
  return hooksOf.get(db) ?? EMPTY;
}

const EMPTY: ReadonlySet<CommitHook> = new Set();
