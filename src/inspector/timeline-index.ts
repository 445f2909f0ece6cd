/**
 * What the timeline's filters need without reading a whole session: per session, the sequences of
 * each event type and the time of every TIME_EVERY-th event (a time query reads at most that many
 * events from the log to find its sequence). Kept in blocks of TIMELINE_BLOCK events: each full block
 * goes to the inspector's index (index-store.ts; beside the log, it survives a restart), and memory
 * holds the open block of each session, the per-type counts of its full blocks and a few blocks read
 * back (BLOCK_CACHE). Fed from the log's subscription (and caught up from the log on demand, from the
 * last full block kept); events must come in order, a redelivered one is ignored.
 */
import type { SessionEvent } from '../events/envelope.ts';
import type { EventLog } from '../events/event-log.ts';
import { MemoryInspectorIndex, TIMELINE_BLOCK, type InspectorIndexStore, type TimelineBlock, type TimelineBlockSummary } from './index-store.ts';

/** One event time kept per this many events. */
export const TIME_EVERY = 64;
/** Full blocks kept in memory once read back (the rest are read from the index when a query needs them). */
export const BLOCK_CACHE = 64;

interface Entry {
  /** Sequences indexed (1 to count). */
  count: number;
  /** The full blocks, from the first. */
  full: TimelineBlockSummary[];
  /** The block being filled. */
  open: TimelineBlock;
}

/** Matching sequences by position: `first(seq)` is the position of the first one >= seq. */
export interface Candidates {
  length: number;
  at(i: number): number;
  first(seq: number): number;
}

const emptyBlock = (block: number): TimelineBlock => ({ block, lastId: '', times: [], types: {} });

export class TimelineIndex {
  private readonly sessions = new Map<string, Entry>();
  private readonly cache = new Map<string, TimelineBlock>();

  constructor(private readonly store: InspectorIndexStore = new MemoryInspectorIndex()) {}

  private entry(sessionId: string): Entry {
    let entry = this.sessions.get(sessionId);
    if (!entry) {
      const full = this.store.timelineOf(sessionId);
      entry = { count: full.length * TIMELINE_BLOCK, full, open: emptyBlock(full.length) };
      this.sessions.set(sessionId, entry);
    }
    return entry;
  }

  add(events: readonly SessionEvent[]): void {
    for (const e of events) {
      const entry = this.entry(e.sessionId);
      if (e.seq !== entry.count + 1) continue; // redelivered (or past a gap, which the catch-up fills)
      entry.count = e.seq;
      const open = entry.open;
      if ((e.seq - 1) % TIME_EVERY === 0) open.times.push(e.time);
      (open.types[e.type] ??= []).push(e.seq);
      if (e.seq % TIMELINE_BLOCK === 0) {
        open.lastId = e.id;
        this.store.putTimelineBlocks(e.sessionId, [open]);
        entry.full.push({
          block: open.block,
          lastId: open.lastId,
          firstTime: open.times[0] ?? 0,
          counts: Object.fromEntries(Object.entries(open.types).map(([t, s]) => [t, s.length])),
        });
        entry.open = emptyBlock(open.block + 1);
      }
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

  /** Drops what memory holds of the session: an older life of it (the caller has the store forget its blocks too), or one let go (its blocks stay kept). */
  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
    for (const key of [...this.cache.keys()]) if (key.startsWith(`${sessionId}\u0000`)) this.cache.delete(key);
  }

  indexedSeq(sessionId: string): number {
    return this.entry(sessionId).count;
  }

  /** The block (full ones from the index, through the cache; the open one from memory). */
  private block(sessionId: string, entry: Entry, k: number): TimelineBlock {
    if (k === entry.open.block) return entry.open;
    const key = `${sessionId}\u0000${k}`;
    let block = this.cache.get(key);
    if (block) {
      this.cache.delete(key);
    } else {
      block = this.store.timelineBlock(sessionId, k) ?? emptyBlock(k);
      if (this.cache.size >= BLOCK_CACHE) this.cache.delete(this.cache.keys().next().value!);
    }
    this.cache.set(key, block);
    return block;
  }

  /** Sequences (ascending, up to `lastSeq`) of the events whose type matches one of `patterns` (`tool.*`: a family), by position. */
  candidates(sessionId: string, patterns: readonly string[], lastSeq: number): Candidates {
    const entry = this.entry(sessionId);
    const n = Math.min(entry.count, lastSeq);
    const blocks = Math.ceil(n / TIMELINE_BLOCK);
    const matches = (type: string) => patterns.some((p) => typeMatches(p, type));
    const memo = new Map<number, number[]>();
    const seqsOf = (k: number): number[] => {
      let seqs = memo.get(k);
      if (!seqs) {
        const lists = Object.entries(this.block(sessionId, entry, k).types)
          .filter(([t]) => matches(t))
          .map(([, s]) => s);
        seqs = lists.length === 1 ? lists[0]! : lists.flat().sort((a, b) => a - b);
        if ((k + 1) * TIMELINE_BLOCK > n) seqs = seqs.slice(0, upperBound(seqs, n));
        memo.set(k, seqs);
      }
      return seqs;
    };
    // starts[k]: matches before block k
    const starts = [0];
    for (let k = 0; k < blocks; k++) {
      const summary = entry.full[k];
      const counted =
        summary && (k + 1) * TIMELINE_BLOCK <= n ? Object.entries(summary.counts).reduce((sum, [t, c]) => sum + (matches(t) ? c : 0), 0) : seqsOf(k).length;
      starts.push(starts[k]! + counted);
    }
    const length = starts[blocks]!;
    return {
      length,
      at: (i) => {
        const k = upperBound(starts, i) - 1;
        return seqsOf(k)[i - starts[k]!]!;
      },
      first: (seq) => {
        if (seq <= 1) return 0;
        const k = Math.floor((seq - 1) / TIMELINE_BLOCK);
        if (k >= blocks) return length;
        return starts[k]! + upperBound(seqsOf(k), seq - 1);
      },
    };
  }

  /** Sequences of matching events up to `lastSeq` (every one: for small sessions and tests). */
  seqsOfTypes(sessionId: string, patterns: readonly string[], lastSeq: number): number[] {
    const c = this.candidates(sessionId, patterns, lastSeq);
    return Array.from({ length: c.length }, (_, i) => c.at(i));
  }

  /** The first sequence whose event time is >= `time` (times are those the log stamped, ascending per session); null if none. */
  async seqAtTime(log: EventLog, sessionId: string, time: number, lastSeq: number): Promise<number | null> {
    const entry = this.entry(sessionId);
    const n = Math.min(entry.count, lastSeq);
    if (n === 0) return null;
    const perBlock = TIMELINE_BLOCK / TIME_EVERY;
    // the k-th kept time (that of seq k * TIME_EVERY + 1)
    const timeAt = (k: number): number => {
      const b = Math.floor(k / perBlock);
      const within = k % perBlock;
      if (within === 0 && entry.full[b]) return entry.full[b]!.firstTime;
      return this.block(sessionId, entry, b).times[within]!;
    };
    // the first kept time >= time: the answer is it, or in the TIME_EVERY events before it
    let lo = 0;
    let hi = Math.ceil(n / TIME_EVERY);
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (timeAt(mid) < time) lo = mid + 1;
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
