/**
 * Tags: metadata a session carries (`customer=acme`), set by its admissions (they merge) and changed
 * with `tag` (`session.tagged`; `null` removes one). Keys and values are bounded plain strings, so a
 * tag filter is an index lookup and a hostile client cannot grow a session without limit. Pure:
 * validation and merging (the machine folds, the projector indexes).
 */
import { InvalidInputError } from '../errors.ts';

import type { TagChanges, Tags } from './catalog.ts';

export type { TagChanges, Tags };

/** What `sessions.tag` answers. */
export interface TagResult {
  sessionId: string;
  /** The session's tags after the change. */
  tags: Tags;
  /** False when the session had these tags already (nothing was written). */
  changed: boolean;
  /** Sequence of the `session.tagged` event (absent when nothing changed). */
  seq?: number;
}

/** A tag key: letters, digits and `_ . : / -`, 1 to 64 characters, starting with a letter or digit. */
export const TAG_KEY = /^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,63}$/;
/** Longest tag value, in characters (a value is a non-empty string without control characters). */
export const MAX_TAG_VALUE = 256;
/** Most tags a session carries (what an admission or a `tag` may bring it to). */
export const MAX_TAGS = 32;
const CONTROL = /[\u0000-\u001f\u007f]/;

/** `tags` checked (an object of at most `MAX_TAGS` valid keys and values; `null` values when `changes`); a copy with sorted keys. */
export function validateTags(tags: unknown, what: string, options: { changes?: boolean } = {}): Record<string, string | null> {
  if (tags === null || typeof tags !== 'object' || Array.isArray(tags)) {
    throw invalid(
      `${what} must be an object of tags like { "customer": "acme" }, got ${Array.isArray(tags) ? 'an array' : String(tags === null ? 'null' : typeof tags)}`,
    );
  }
  const entries = Object.entries(tags as Record<string, unknown>);
  if (entries.length > MAX_TAGS) throw invalid(`${what} has ${entries.length} tags, over the limit of ${MAX_TAGS} tags per session`);
  const out: Record<string, string | null> = {};
  for (const [key, value] of entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (!TAG_KEY.test(key)) {
      throw invalid(
        `${what} has the tag key ${JSON.stringify(key.slice(0, 80))}: a key is 1 to 64 letters, digits or _ . : / -, starting with a letter or digit`,
      );
    }
    if (value === null && options.changes) {
      out[key] = null;
      continue;
    }
    if (typeof value !== 'string' || value.length === 0 || value.length > MAX_TAG_VALUE || CONTROL.test(value)) {
      throw invalid(
        `${what} has tag ${key} = ${JSON.stringify(typeof value === 'string' ? value.slice(0, 80) : value)}: a value is a string of 1 to ${MAX_TAG_VALUE} characters without control characters${options.changes ? ' (null removes the tag)' : ''}`,
      );
    }
    out[key] = value;
  }
  return out;
}

/** The tags after `changes` (`null` removes); the same object when nothing changes. */
export function applyTagChanges(tags: Tags, changes: TagChanges): Tags {
  let out: Record<string, string> | undefined;
  for (const [key, value] of Object.entries(changes)) {
    if (value === null ? !(key in tags) : tags[key] === value) continue;
    out ??= { ...tags };
    if (value === null) delete out[key];
    else out[key] = value;
  }
  return out ? sortedTags(out) : tags;
}

/** The changes that would actually change `tags` (a key set to its value, or removed while absent, is left out). */
export function effectiveChanges(tags: Tags, changes: TagChanges): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const [key, value] of Object.entries(changes)) if (value === null ? key in tags : tags[key] !== value) out[key] = value;
  return out;
}

/** Same keys with the same values. */
export function sameTags(a: Tags | undefined, b: Tags | undefined): boolean {
  const ka = Object.keys(a ?? {});
  const kb = Object.keys(b ?? {});
  return ka.length === kb.length && ka.every((k) => b?.[k] === a?.[k]);
}

function sortedTags(tags: Record<string, string>): Tags {
  return Object.fromEntries(Object.entries(tags).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * `k=v` (the CLI's `--tag`, and `sessiond tag`'s arguments) as a key and value; `k=` (nothing after
 * the `=`) removes the key where `removable`.
 */
export function parseTagArgument(text: string, removable = false): [string, string | null] {
  const at = text.indexOf('=');
  if (at <= 0) throw invalid(`tag ${JSON.stringify(text)} is not key=value (e.g. customer=acme${removable ? ', or customer= to remove it' : ''})`);
  const key = text.slice(0, at);
  const value = text.slice(at + 1);
  if (value === '' && removable) return [key, null];
  return [key, value];
}

function invalid(why: string): InvalidInputError {
  return new InvalidInputError(`Invalid tags: ${why}.`);
}
