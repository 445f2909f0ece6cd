/**
 * The conversation of a session at any sequence, a page of entries at a time, for the inspector's
 * `GET /api/sessions/:id/conversation`: folded (conversation.ts) from the latest mark at or before the
 * sequence, nothing kept between requests (why: docs/inspector.md#the-conversation).
 */
import { ErrorCode, HttpError, SessiondError } from '../errors.ts';
import type { EventLog } from '../events/event-log.ts';
import { emptyConversation, foldConversation, type Conversation, type ConversationEntry, type PromptEntry } from './conversation.ts';
import { TEXT_SHOWN, URL_SHOWN, VALUE_SHOWN } from './bounded.ts';
import type { ConversationMark, ConversationMarks } from './conversation-marks.ts';

export const ENTRIES_SHOWN = 100;
export const MAX_ENTRIES_SHOWN = 500;

export interface ConversationView {
  sessionId: string;
  /** The sequence shown, and the time of its event (what "running for" is judged at). */
  seq: number;
  asOf: number;
  lastSeq: number;
  /** Entries the conversation has at `seq`; `entries` is a page of them, in order. */
  total: number;
  entries: ConversationEntry[];
  /** Pass as `before=` for the page of entries before this one; null when it starts at the first. */
  before: number | null;
  /** Prompts admitted by `seq` and not yet in a turn (at most `limit`, the oldest first), and how many there are. */
  queued: PromptEntry[];
  queuedTotal: number;
  /** The bounds that cut text: characters of a text, a JSON value, a URL. */
  limits: { text: number; value: number; url: number };
}

export interface ConversationQuery {
  seq: number | undefined;
  limit: number;
  before: number | undefined;
}

const PARAMS = ['seq', 'limit', 'before'];

const whole = (params: URLSearchParams, name: string, min: number, max: number, what: string): number | undefined => {
  const raw = params.get(name);
  if (raw === null) return undefined;
  const n = Number(raw);
  if (!/^\d{1,15}$/.test(raw) || n < min || n > max) {
    throw new HttpError(400, 'invalid_query', `Invalid ${name} ${JSON.stringify(raw)}: use ${what}.`);
  }
  return n;
};

export function parseConversationQuery(params: URLSearchParams): ConversationQuery {
  for (const key of params.keys())
    if (!PARAMS.includes(key))
      throw new HttpError(400, 'invalid_query', `Unknown query parameter ${JSON.stringify(key)}: the conversation route takes ${PARAMS.join(', ')}.`);
  return {
    seq: whole(params, 'seq', 0, Number.MAX_SAFE_INTEGER, 'a whole number >= 0 (0 is the session before its first event)'),
    limit: whole(params, 'limit', 1, MAX_ENTRIES_SHOWN, `a whole number of entries from 1 to ${MAX_ENTRIES_SHOWN} (default ${ENTRIES_SHOWN})`) ?? ENTRIES_SHOWN,
    before: whole(params, 'before', 0, Number.MAX_SAFE_INTEGER, 'an entry index from a page of this route (its before cursor)'),
  };
}

/** A page of a folded conversation (pure). */
export function conversationPage(c: Conversation, lastSeq: number, query: Pick<ConversationQuery, 'limit' | 'before'>): ConversationView {
  const end = Math.min(query.before ?? c.entries.length, c.entries.length);
  const start = Math.max(0, end - query.limit);
  return {
    sessionId: c.sessionId,
    seq: c.seq,
    asOf: c.time,
    lastSeq,
    total: c.entries.length,
    entries: c.entries.slice(start, end),
    before: start > 0 ? start : null,
    queued: c.queued.slice(0, query.limit),
    queuedTotal: c.queued.length,
    limits: { text: TEXT_SHOWN, value: VALUE_SHOWN, url: URL_SHOWN },
  };
}

/** Which entries a page shows: the latest `limit` (before entry index `before`, when given). */
export interface ConversationPageQuery {
  limit: number;
  before?: number | undefined;
}

export interface ConversationAtOptions {
  log: EventLog;
  /** Where the session's conversation may be folded from (fed by the log's subscription); absent: from seq 0. */
  marks?: Pick<ConversationMarks, 'marksOf'>;
}

/** Events read from the log per call. */
const READ_PAGE = 5_000;

/** A page of the conversation of a session at `seq` (at most its last sequence, `lastSeq`: the caller checks). */
export function conversationAt(
  options: ConversationAtOptions,
): (sessionId: string, seq: number, lastSeq: number, query: ConversationPageQuery) => Promise<ConversationView> {
  const { log } = options;

  /** The conversation from `mark` (a tail from its `first`; null: from seq 0) up to `seq`; null when the log no longer has the mark's event. */
  const foldFrom = async (sessionId: string, mark: ConversationMark | null, seq: number): Promise<Conversation | null> => {
    let c: Conversation = mark
      ? { ...emptyConversation(sessionId), seq: mark.seq, eventId: mark.eventId, time: mark.time, first: mark.first }
      : emptyConversation(sessionId);
    // from a mark, its own event is read again: the log must still hold it (a session deleted and written again does not)
    for (let from = mark ? mark.seq - 1 : 0; from < seq; ) {
      const limit = Math.min(READ_PAGE, seq - from);
      const events = await log.readSession(sessionId, { afterSeq: from, limit });
      if (mark && from === mark.seq - 1 && events[0]?.id !== mark.eventId) return null;
      if (events.length !== limit)
        throw new SessiondError(
          ErrorCode.InconsistentStream,
          `Session ${sessionId}: ${log.name} returned ${events.length} events after seq ${from}, expected ${limit}.`,
        );
      c = foldConversation(c, events);
      from += limit;
    }
    return c;
  };

  const view = async (sessionId: string, seq: number, lastSeq: number, query: ConversationPageQuery, marks: readonly ConversationMark[]) => {
    const at = lastIndex(marks, (m) => m.seq <= seq);
    const tail = await foldFrom(sessionId, marks[at] ?? null, seq);
    if (!tail) return null;
    const tailFirst = tail.first ?? 0;
    const total = tailFirst + tail.entries.length;
    const end = Math.min(query.before ?? total, total);
    const start = Math.max(0, end - query.limit);
    const entries: ConversationEntry[] = [];
    if (start < tailFirst) {
      // entries before the tail's mark were final there: folded from the latest mark before them to the first mark after them
      const upTo = Math.min(end, tailFirst);
      const from = marks[lastIndex(marks, (m) => m.first <= start)] ?? null;
      const to = marks.find((m) => m.first >= upTo)!;
      const earlier = await foldFrom(sessionId, from, to.seq);
      if (!earlier) return null;
      const base = earlier.first ?? 0;
      entries.push(...earlier.entries.slice(start - base, upTo - base));
    }
    entries.push(...tail.entries.slice(Math.max(start, tailFirst) - tailFirst, Math.max(end, tailFirst) - tailFirst));
    return {
      sessionId,
      seq: tail.seq,
      asOf: tail.time,
      lastSeq,
      total,
      entries,
      before: start > 0 ? start : null,
      queued: tail.queued.slice(0, query.limit),
      queuedTotal: tail.queued.length,
      limits: { text: TEXT_SHOWN, value: VALUE_SHOWN, url: URL_SHOWN },
    } satisfies ConversationView;
  };

  return async (sessionId, seq, lastSeq, query) =>
    (await view(sessionId, seq, lastSeq, query, options.marks?.marksOf(sessionId) ?? [])) ??
    // the marks are of an older life of the session (deleted and written again): from seq 0
    (await view(sessionId, seq, lastSeq, query, []))!;
}

/** The index of the last element matching (they match up to some index, then no more), -1 when none. */
function lastIndex<T>(sorted: readonly T[], matches: (x: T) => boolean): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (matches(sorted[mid]!)) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}
