/**
 * The paginated timeline (`GET /api/sessions/:id/events`): one page of a session's events at a time,
 * by sequence, time, type or text, in ascending seq with `before`/`after` cursors. The queries:
 * docs/inspector.md (the events route's table).
 */
import type { EventLog } from '../events/event-log.ts';
import { durableEventTypes } from '../events/catalog.ts';
import { type Candidates, type TimelineIndex, typeMatches } from './timeline-index.ts';
import type { TimelinePage, TimelineRow } from './view-types.ts';
import { parseSeq, timelineRow } from './views.ts';
import { HttpError } from '../errors.ts';

export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 500;
/** Events a text search reads per request at most. */
export const SCAN_WINDOW = 5_000;

type Anchor = { kind: 'last' } | { kind: 'before' | 'after' | 'around'; seq: number } | { kind: 'time'; time: number };

export interface PageQuery {
  anchor: Anchor;
  limit: number;
  /** Type patterns (`tool.*` for a family); null: every type. */
  types: string[] | null;
  /** Text to find in payloads (lower-cased); null: no search. */
  q: string | null;
}

const PARAMS = ['before', 'after', 'around', 'time', 'limit', 'type', 'q'];
const ANCHORS = ['before', 'after', 'around', 'time'] as const;

export function parsePageQuery(params: URLSearchParams): PageQuery {
  for (const key of params.keys()) {
    if (!PARAMS.includes(key)) throw badQuery(`Unknown query parameter ${JSON.stringify(key)}: the events route takes ${PARAMS.join(', ')}.`);
  }
  const given = ANCHORS.filter((a) => params.has(a));
  if (given.length > 1) throw badQuery(`Use one of before, after, around or time, not ${given.join(' and ')}.`);
  let anchor: Anchor = { kind: 'last' };
  const kind = given[0];
  if (kind === 'time') anchor = { kind, time: parseTime(params.get('time')!) };
  else if (kind !== undefined) anchor = { kind, seq: parseSeq(params.get(kind), kind) };
  const rawLimit = params.get('limit');
  const limit = rawLimit === null ? DEFAULT_PAGE : Number(rawLimit);
  if (rawLimit !== null && (!/^\d+$/.test(rawLimit) || limit < 1 || limit > MAX_PAGE)) {
    throw badQuery(`Invalid limit ${JSON.stringify(rawLimit)}: use a whole number of events from 1 to ${MAX_PAGE} (default ${DEFAULT_PAGE}).`);
  }
  const rawTypes = params.get('type');
  const types =
    rawTypes === null
      ? null
      : rawTypes
          .split(',')
          .map((t) => t.trim())
          .filter(Boolean);
  for (const t of types ?? []) {
    if (!durableEventTypes.some((known) => typeMatches(t, known))) {
      throw badQuery(`Unknown event type ${JSON.stringify(t)}: use one of ${durableEventTypes.join(', ')}, or a family such as tool.*, comma-separated.`);
    }
  }
  if (types?.length === 0) throw badQuery('Empty type: use type=T (e.g. type=execution.claimed or type=tool.*), or leave it out for every type.');
  const q = params.get('q');
  if (q !== null && (q.trim() === '' || q.length > 200)) throw badQuery('Invalid q: use 1 to 200 characters of text to find in payloads, or leave it out.');
  if (q !== null && (anchor.kind === 'around' || anchor.kind === 'time')) {
    throw badQuery(`A text search (q) pages with before=SEQ or after=SEQ (or neither, for the latest matches), not ${anchor.kind}.`);
  }
  return { anchor, limit, types, q: q === null ? null : q.toLowerCase() };
}

function parseTime(raw: string): number {
  const time = /^\d{1,15}$/.test(raw) ? Number(raw) : Date.parse(raw);
  if (!Number.isFinite(time)) {
    throw new HttpError(
      400,
      'invalid_time',
      `Invalid time ${JSON.stringify(raw)}: use milliseconds since the epoch or an ISO 8601 time such as 2026-01-01T12:00:00.000Z.`,
    );
  }
  return time;
}

const badQuery = (message: string) => new HttpError(400, 'invalid_query', message);

/** One page of the session's events; `index` must hold the session up to `lastSeq` for type and time queries (see TimelineIndex.catchUp). */
export async function timelinePage(log: EventLog, index: TimelineIndex, sessionId: string, lastSeq: number, query: PageQuery): Promise<TimelinePage> {
  if (query.q !== null) return searchPage(log, sessionId, lastSeq, query, query.q);
  const candidates: Candidates =
    query.types === null
      ? { length: lastSeq, at: (i) => i + 1, first: (seq) => Math.max(0, Math.min(seq - 1, lastSeq)) }
      : index.candidates(sessionId, query.types, lastSeq);
  const { anchor, limit } = query;
  const n = candidates.length;
  let lo: number;
  let hi: number;
  if (anchor.kind === 'last') {
    hi = n;
    lo = Math.max(0, n - limit);
  } else if (anchor.kind === 'before') {
    hi = candidates.first(anchor.seq);
    lo = Math.max(0, hi - limit);
  } else if (anchor.kind === 'after') {
    lo = candidates.first(anchor.seq + 1);
    hi = Math.min(n, lo + limit);
  } else {
    const seq = anchor.kind === 'time' ? ((await index.seqAtTime(log, sessionId, anchor.time, lastSeq)) ?? lastSeq) : anchor.seq;
    lo = Math.max(0, Math.min(candidates.first(seq) - Math.floor(limit / 2), n - limit));
    hi = Math.min(n, lo + limit);
  }
  const seqs = Array.from({ length: hi - lo }, (_, i) => candidates.at(lo + i));
  return {
    sessionId,
    lastSeq,
    events: await readSeqs(log, sessionId, seqs),
    before: lo > 0 ? (hi > lo ? candidates.at(lo) : candidates.at(lo - 1) + 1) : null,
    after: hi < n ? (hi > lo ? candidates.at(hi - 1) : candidates.at(hi) - 1) : null,
  };
}

/** The events at these sequences (ascending), read in runs: one log read per run of nearby sequences. */
async function readSeqs(log: EventLog, sessionId: string, seqs: readonly number[]): Promise<TimelineRow[]> {
  const out: TimelineRow[] = [];
  const wanted = new Set(seqs);
  for (let i = 0; i < seqs.length; ) {
    let j = i;
    while (j + 1 < seqs.length && seqs[j + 1]! - seqs[j]! <= 32) j++;
    const events = await log.readSession(sessionId, { afterSeq: seqs[i]! - 1, limit: seqs[j]! - seqs[i]! + 1 });
    for (const e of events) if (wanted.has(e.seq)) out.push(timelineRow(e));
    i = j + 1;
  }
  return out;
}

/** A text search: reads at most SCAN_WINDOW events from the cursor on and keeps the matches. */
async function searchPage(log: EventLog, sessionId: string, lastSeq: number, query: PageQuery, q: string): Promise<TimelinePage> {
  const { anchor, limit, types } = query;
  const forward = anchor.kind === 'after';
  const from = forward ? anchor.seq + 1 : Math.max(1, (anchor.kind === 'before' ? Math.min(anchor.seq, lastSeq + 1) : lastSeq + 1) - SCAN_WINDOW);
  const to = forward ? Math.min(lastSeq, anchor.seq + SCAN_WINDOW) : (anchor.kind === 'before' ? Math.min(anchor.seq, lastSeq + 1) : lastSeq + 1) - 1;
  const events = to >= from ? await log.readSession(sessionId, { afterSeq: from - 1, limit: to - from + 1 }) : [];
  const matches = events.filter((e) => (types === null || types.some((t) => typeMatches(t, e.type))) && JSON.stringify(e.payload).toLowerCase().includes(q));
  const full = matches.length >= limit;
  const page = forward ? matches.slice(0, limit) : matches.slice(-limit);
  let before: number | null;
  let after: number | null;
  if (forward) {
    before = from > 1 ? from : null;
    after = full ? page[page.length - 1]!.seq : to < lastSeq ? to : null;
  } else {
    before = full ? page[0]!.seq : from > 1 ? from : null;
    after = to < lastSeq ? to : null;
  }
  return { sessionId, lastSeq, events: page.map(timelineRow), before, after, scanned: { from, to } };
}
