/**
 * Where the conversation fold finds the entries later events change (a step by its message id, a
 * turn or a recovery by its execution id, a compaction by its message id), so a long conversation
 * folds in time proportional to the events, not to events x entries.
 */
import type { ConversationEntry } from './conversation-types.ts';

/** The key an entry is found by when later events change it (prompts, waits and forks have none, or are searched). */
export function keyOf(e: { kind: string; messageId?: string; executionId?: string | null }): string | null {
  if (e.kind === 'step') return `m${e.messageId}`;
  if (e.kind === 'compaction') return `c${e.messageId}`;
  if (e.kind === 'turn') return `t${e.executionId}`;
  if (e.kind === 'recovery') return `r${e.executionId}`;
  return null;
}

/**
 * Where each keyed entry is: a cache beside the data, never part of it. `map` holds exactly the
 * keyed entries below `length`; a fold that continues from entries of that length takes it over
 * and extends it (the usual case: following the log); one from entries it has outgrown (time
 * travel back to a kept fold, or another fold from the same point) builds its own.
 */
export interface Places {
  map: Map<string, number>;
  length: number;
}
export const placesOf = new WeakMap<readonly ConversationEntry[], Places>();

export function places(entries: readonly ConversationEntry[]): Places {
  const kept = placesOf.get(entries);
  if (kept && kept.length === entries.length) return kept;
  const map = new Map<string, number>();
  entries.forEach((e, at) => {
    const key = keyOf(e);
    if (key !== null) map.set(key, at); // the place in this array (a tail's entries start at its `first`)
  });
  return { map, length: entries.length };
}
