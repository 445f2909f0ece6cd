/**
 * Listing sessions (`sessions.list`, `sessiond ls`, the NATS `list` command): the filter, its checks
 * and the stable cursor (types only: the NATS client imports this without SQLite; the query is
 * projector/session-list.ts). Why the cursor: docs/architecture.md#design-notes-the-projector.
 */
import { InvalidInputError } from '../errors.ts';
import type { SessionStateValue } from '../machines/decider.ts';
import { isIdText, MAX_ID_LENGTH } from '../ids.ts';
import { validateTags, type Tags } from '../events/tags.ts';
import { checkOwner } from './owner.ts';

export const SESSION_STATES: readonly SessionStateValue[] = ['idle', 'claimed', 'running', 'recovering', 'settled'];
/** Sessions a page holds unless `limit` says otherwise, and the most it may say. */
export const DEFAULT_LIST_LIMIT = 50;
export const MAX_LIST_LIMIT = 1000;

export interface ListFilter {
  /** Only sessions in this state. */
  state?: SessionStateValue;
  /** Only sessions whose turn waits (an approval, a signal, a timer): true; or only those that do not: false. */
  waiting?: boolean;
  /** Only sessions carrying every one of these tags. */
  tags?: Tags;
  /** Only sessions whose id starts with this (`cust-42:`): 1-128 of the characters an id may hold. */
  idPrefix?: string;
  /** Only sessions with an event at or after this time (ms since the epoch). */
  updatedSince?: number;
  /** Only sessions this owner reaches: those it owns, and those with no owner (sessions/owner.ts). */
  reachableBy?: string;
  /** Only the children of this session: those whose turn it last called (`ctx.callSession`). */
  calledBy?: string;
  /** Sessions per page (default `DEFAULT_LIST_LIMIT`, at most `MAX_LIST_LIMIT`). */
  limit?: number;
  /** The `next` of the previous page: this page starts after it. */
  after?: string;
}

/** A session in a list: what the projection knows of it (`status` has the whole of it, from the log). */
export interface SessionListItem {
  sessionId: string;
  state: SessionStateValue;
  /** Whether a wait of its turn is open. */
  waiting: boolean;
  /** Inputs admitted and not yet run (nor dropped). */
  pendingInputs: number;
  /** Sequence of its last event. */
  seq: number;
  /** Time of its first event, and of its last. */
  createdAt: number;
  updatedAt: number;
  tags: Tags;
  /** The session and sequence it was forked from (null when not a fork). */
  forkedFrom: { sessionId: string; seq: number } | null;
  /** Who it belongs to (sessions/owner.ts), null when no one. */
  ownedBy: string | null;
  /** The session whose turn last called it (`ctx.callSession`), null when none has: its parent. */
  calledBy: string | null;
  /** Sessions whose `calledBy` is this one: its children. */
  childCount: number;
}

export interface SessionPage {
  sessions: SessionListItem[];
  /** The cursor of the next page (`after`), or null when this page is the last. */
  next: string | null;
}

/** A filter checked: known fields, each of its type; the limit applied; the cursor decoded. */
export interface CheckedFilter {
  state?: SessionStateValue;
  waiting?: boolean;
  tags: [string, string][];
  idPrefix?: string;
  updatedSince?: number;
  reachableBy?: string;
  calledBy?: string;
  limit: number;
  after?: Cursor;
}

/** Where a page starts: after the session created at `time` with id `id` (newest first). */
export interface Cursor {
  time: number;
  id: string;
}

const FIELDS = ['state', 'waiting', 'tags', 'idPrefix', 'updatedSince', 'reachableBy', 'calledBy', 'limit', 'after'];

export function checkListFilter(filter: ListFilter | undefined): CheckedFilter {
  const f = (filter ?? {}) as Record<string, unknown>;
  if (f === null || typeof f !== 'object' || Array.isArray(f)) throw invalid('the filter must be an object like { state: "settled", limit: 50 }');
  const unknown = Object.keys(f).filter((k) => !FIELDS.includes(k) && f[k] !== undefined);
  if (unknown.length > 0) throw invalid(`unknown field${unknown.length > 1 ? 's' : ''} ${unknown.slice(0, 5).join(', ')}: the fields are ${FIELDS.join(', ')}`);
  const out: CheckedFilter = { tags: [], limit: DEFAULT_LIST_LIMIT };
  if (f.state !== undefined) {
    if (!SESSION_STATES.includes(f.state as SessionStateValue))
      throw invalid(`state must be one of ${SESSION_STATES.join(', ')}, got ${JSON.stringify(f.state)}`);
    out.state = f.state as SessionStateValue;
  }
  if (f.waiting !== undefined) {
    if (typeof f.waiting !== 'boolean') throw invalid('waiting must be true or false');
    out.waiting = f.waiting;
  }
  if (f.tags !== undefined) out.tags = Object.entries(validateTags(f.tags, 'the filter') as Record<string, string>);
  if (f.idPrefix !== undefined) {
    if (!isIdText(f.idPrefix))
      throw invalid(
        `idPrefix must be the start of a session id, 1-${MAX_ID_LENGTH} characters from A-Z a-z 0-9 _ - : + = @, got ${JSON.stringify(String(f.idPrefix).slice(0, 80))}`,
      );
    out.idPrefix = f.idPrefix as string;
  }
  if (f.updatedSince !== undefined) {
    if (!Number.isSafeInteger(f.updatedSince) || (f.updatedSince as number) < 0)
      throw invalid(`updatedSince must be a time in whole milliseconds since the epoch, got ${JSON.stringify(f.updatedSince)}`);
    out.updatedSince = f.updatedSince as number;
  }
  if (f.reachableBy !== undefined) {
    try {
      out.reachableBy = checkOwner(f.reachableBy);
    } catch (err) {
      throw invalid(`reachableBy: ${(err as Error).message}`);
    }
  }
  if (f.calledBy !== undefined) {
    if (typeof f.calledBy !== 'string' || !isIdText(f.calledBy))
      throw invalid(
        `calledBy must be a session id, 1-${MAX_ID_LENGTH} characters from A-Z a-z 0-9 _ - : + = @, got ${JSON.stringify(String(f.calledBy).slice(0, 80))}`,
      );
    out.calledBy = f.calledBy;
  }
  if (f.limit !== undefined) {
    if (!Number.isInteger(f.limit) || (f.limit as number) < 1 || (f.limit as number) > MAX_LIST_LIMIT)
      throw invalid(`limit must be a whole number from 1 to ${MAX_LIST_LIMIT}, got ${JSON.stringify(f.limit)}`);
    out.limit = f.limit as number;
  }
  if (f.after !== undefined && f.after !== null) out.after = decodeCursor(f.after);
  return out;
}

export function encodeCursor(c: Cursor): string {
  return Buffer.from(`${c.time}.${c.id}`, 'utf8').toString('base64url');
}

export function decodeCursor(value: unknown): Cursor {
  const text = typeof value === 'string' && value.length <= 256 ? Buffer.from(value, 'base64url').toString('utf8') : '';
  const m = /^(\d{1,16})\.([A-Za-z0-9_\-:+=@]{1,128})$/.exec(text);
  if (!m) throw invalid(`after ${JSON.stringify(String(value).slice(0, 80))} is not a cursor: pass the "next" of the page before, as it was given`);
  return { time: Number(m[1]), id: m[2]! };
}

function invalid(why: string): InvalidInputError {
  return new InvalidInputError(`Invalid list filter: ${why}.`);
}
