/**
 * Work that commits with the events: a hook on a connection runs inside every group transaction an
 * SqliteEventLog there commits, after its appends, with the group's events in position order, in a
 * savepoint of its own (one that throws is rolled back alone). The projector writes its rows through
 * it (docs/architecture.md#the-projection-rows).
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
