/**
 * What the timeline's filters need without reading a whole session: per session, the sequences of
 * each event type and the time of every event. Fed from the log's subscription (and caught up
 * from the log on demand); events must come in order, a redelivered one is ignored.
 */
import type { SessionEvent } from '../events/envelope.ts';
import type { EventLog } from '../events/event-log.ts';

interface Entry {
  /** times[i] is the time of the event at seq i + 1. */
  times: number[];
  /** Event type -> its sequences, ascending. */
  types: Map<string, number[]>;
}

export class TimelineIndex {
  private readonly sessions = new Map<string, Entry>();

  add(events: readonly SessionEvent[]): void {
    for (const e of events) {
      let entry = this.sessions.get(e.sessionId);
      if (!entry) this.sessions.set(e.sessionId, (entry = { times: [], types: new Map() }));
      if (e.seq !== entry.times.length + 1) continue; // redelivered (or past a gap, which the catch-up fills)
      entry.times.push(e.time);
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
    return this.sessions.get(sessionId)?.times.length ?? 0;
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
  seqAtTime(sessionId: string, time: number, lastSeq: number): number | null {
    const times = this.sessions.get(sessionId)?.times ?? [];
    let lo = 0;
    let hi = Math.min(times.length, lastSeq);
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (times[mid]! < time) lo = mid + 1;
      else hi = mid;
    }
    return lo < Math.min(times.length, lastSeq) ? lo + 1 : null;
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
