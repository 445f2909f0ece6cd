/**
 * The conversation of a session at any sequence, for the inspector's route
 *
 *   GET /api/sessions/:id/conversation[?seq=N][&limit=L][&before=I]
 *
 * the latest `limit` entries (default ENTRIES_SHOWN) at sequence N (default: the session's last),
 * or those before entry index I (the `before` cursor of the page after them), and the prompts
 * queued then.
 *
 * Folding is conversation.ts's; here it is kept at every multiple of `every` events (made on the way
 * the first time a session is shown), with the latest fold asked for, for the `sessions` most
 * recently shown, so a request folds at most `every` events from the nearest fold at or before its
 * sequence, and following the head folds only what came since the last request. A kept fold is checked
 * against the log (its last event's id) before use: a session deleted and written again is folded
 * afresh.
 */
import { ErrorCode, HttpError, SessiondError } from '../errors.ts';
import type { EventLog } from '../events/event-log.ts';
import { emptyConversation, foldConversation, type Conversation, type ConversationEntry, type PromptEntry } from './conversation.ts';
import { TEXT_SHOWN, URL_SHOWN, VALUE_SHOWN } from './bounded.ts';

export const CONVERSATION_CHECKPOINT_EVERY = 1_000;
export const CONVERSATION_SESSIONS = 4;
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

export interface ConversationAtOptions {
  log: EventLog;
  every?: number;
  sessions?: number;
}

/** The conversation of a session at `seq` (at most its last sequence: the caller checks). */
export function conversationAt(options: ConversationAtOptions): (sessionId: string, seq: number) => Promise<Conversation> {
  const { log } = options;
  const every = options.every ?? CONVERSATION_CHECKPOINT_EVERY;
  const keep = options.sessions ?? CONVERSATION_SESSIONS;
  // per session: the folds kept at multiples of `every`, and the latest fold asked for (following
  // the head live then folds only what came since)
  const kept = new Map<string, { folds: Conversation[]; latest: Conversation | null }>();

  const keptOf = (sessionId: string) => {
    const entry = kept.get(sessionId) ?? { folds: [], latest: null };
    kept.delete(sessionId); // most recently used last
    kept.set(sessionId, entry);
    while (kept.size > keep) kept.delete(kept.keys().next().value!);
    return entry;
  };

  return async (sessionId, seq) => {
    let entry = keptOf(sessionId);
    let c = emptyConversation(sessionId);
    for (const k of entry.folds) if (k.seq <= seq) c = k;
    if (entry.latest && entry.latest.seq <= seq && entry.latest.seq > c.seq) c = entry.latest;
    // a kept fold is checked against the log first (its last event's id), also when it is the one asked for
    for (let checked = c.seq === 0; !checked || c.seq < seq; checked = true) {
      const next = c.seq < seq ? Math.min(seq, (Math.floor(c.seq / every) + 1) * every) : c.seq;
      const from = c.seq > 0 ? c.seq - 1 : 0; // from a kept fold, read its own last event again
      const events = await log.readSession(sessionId, { afterSeq: from, limit: next - from });
      if (c.seq > 0 && events[0]?.id !== c.eventId) {
        kept.set(sessionId, (entry = { folds: [], latest: null }));
        c = emptyConversation(sessionId);
        continue;
      }
      if (events.length !== next - from)
        throw new SessiondError(
          ErrorCode.InconsistentStream,
          `Session ${sessionId}: ${log.name} returned ${events.length} events after seq ${from}, expected ${next - from}.`,
        );
      c = foldConversation(c, events);
      if (c.seq % every === 0 && !entry.folds.some((k) => k.seq === c.seq)) {
        entry.folds.push(c);
        entry.folds.sort((a, b) => a.seq - b.seq);
      }
    }
    entry.latest = c;
    return c;
  };
}
