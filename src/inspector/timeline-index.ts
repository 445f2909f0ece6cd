/**
 * What the timeline's filters need without reading a whole session: per session, the sequences of
 * each event type and the time of every TIME_EVERY-th event (a time query reads at most that many
 * events from the log to find its sequence). Fed from the log's subscription (and caught up from
 * the log on demand); events must come in order, a redelivered one is ignored.
 */
import type { SessionEvent } from '../events/envelope.ts';
import type { EventLog } from '../events/event-log.ts';

/** One event time kept per this many events. */
export const TIME_EVERY = 64;

interface Entry {
  /** Sequences indexed (1 to count). */
  count: number;
  /** times[k] is the time of the event at seq k * TIME_EVERY + 1. */
  times: number[];
  /** Event type -> its sequences, ascending. */
  types: Map<string, number[]>;
}

export class TimelineIndex {
  private readonly sessions = new Map<string, Entry>();

  add(events: readonly SessionEvent[]): void {
    for (const e of events) {
      let entry = this.sessions.get(e.sessionId);
      if (!entry) this.sessions.set(e.sessionId, (entry = { count: 0, times: [], types: new Map() }));
      if (e.seq !== entry.count + 1) continue; // redelivered (or past a gap, which the catch-up fills)
      entry.count = e.seq;
      if ((e.seq - 1) % TIME_EVERY === 0) entry.times.push(e.time);
      let seqs = entry.types.get(e.type);
      if (!seqs) entry.types.set(e.type, (seqs = []));
      seqs.push(e.seq);
    }
  }

  /** Indexes what the log holds for the session up to `lastSeq` that the subscription has not brought yet. */
  async catchUp(log: EventLog, sessionId: string, lastSeq: number): Promise<void> {
    let indexed = this.indexedSeq(sessionId);
    while (indexed < lastSeq) {
      const events = await log.readSession(sessionId, { afterSeq: indexed, limit: Math.min(lastSeq - indexed, 10_000) });
      if (events.length === 0) return;
      this.add(events);
      const next = this.indexedSeq(sessionId);
      if (next === indexed) return;
      indexed = next;
    }
  }

  indexedSeq(sessionId: string): number {
    return this.sessions.get(sessionId)?.count ?? 0;
  }

  /** Sequences (ascending, up to `lastSeq`) of the events whose type matches one of `patterns` (`tool.*`: a family). */
  seqsOfTypes(sessionId: string, patterns: readonly string[], lastSeq: number): number[] {
    const entry = this.sessions.get(sessionId);
    if (!entry) return [];
    const lists = [...entry.types].filter(([type]) => patterns.some((p) => typeMatches(p, type))).map(([, seqs]) => seqs);
    const all = lists.length === 1 ? lists[0]! : lists.flat().sort((a, b) => a - b);
    return all.slice(0, upperBound(all, lastSeq));
  }

  /** The first sequence whose event time is >= `time` (times are those the log stamped, ascending per session); null if none. */
  async seqAtTime(log: EventLog, sessionId: string, time: number, lastSeq: number): Promise<number | null> {
    const entry = this.sessions.get(sessionId);
    const n = Math.min(entry?.count ?? 0, lastSeq);
    if (!entry || n === 0) return null;
    const times = entry.times;
    // the first kept time >= time: the answer is it, or in the TIME_EVERY events before it
    let lo = 0;
    let hi = Math.ceil(n / TIME_EVERY);
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (times[mid]! < time) lo = mid + 1;
      else hi = mid;
    }
    if (lo === 0) return 1;
    const from = (lo - 1) * TIME_EVERY; // read seqs from + 1 .. from + TIME_EVERY
    const events = await log.readSession(sessionId, { afterSeq: from, limit: Math.min(TIME_EVERY, n - from) });
    const found = events.find((e) => e.time >= time);
    if (found) return found.seq;
    return from + TIME_EVERY < n ? from + TIME_EVERY + 1 : null;
  }
}

export function typeMatches(pattern: string, type: string): boolean {
  return pattern.endsWith('.*') ? type.startsWith(pattern.slice(0, -1)) : type === pattern;
}

/** Index of the first element > value in an ascending array. */
export function upperBound(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
