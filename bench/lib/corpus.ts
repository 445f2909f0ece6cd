/**
 * Realistic events, cheaply, in any number: a real echo turn is run once on an embedded engine
 * (deterministic ids and clock), its appends are recorded as they were batched, and that template
 * is cloned for as many sessions and turns as a measurement needs. Clones get their own session id,
 * ids (every id string of the template carries a marker that is replaced), sequences, assistant
 * sequences and times, so a projector or an importer sees a valid log, never a repeated id.
 *
 * Order: sessions run in waves of `concurrency` (64, like a busy worker); inside a wave the sessions'
 * appends interleave, as concurrent turns would commit.
 */
import type { DraftEvent, SessionEvent } from '../../src/events/envelope.ts';
import type { EventLog, ReadPagesOptions, SubscribeOptions, Subscription } from '../../src/events/event-log.ts';
import { openEngine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { sequentialIds } from '../../src/ids.ts';
import { systemClock, type Clock } from '../../src/clock.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';

const MARK = 'ZZ';
export const BENCH_PROMPT = 'please summarise the quarterly report for the board and list three risks worth a closer look';

/** An append as it was committed: the session, the sequence it expected, the events. */
export interface Batch {
  sessionId: string;
  expectedSeq: number;
  events: SessionEvent[];
}

export interface Template {
  /** Appends of a session's first turn. */
  first: Batch[];
  /** Appends of a later turn (seqs continue after the first turn). */
  later: Batch[];
  firstLength: number;
  laterLength: number;
  eventsPerTurn: number;
  appendsPerTurn: number;
}

/** Records every committed append of the log it wraps. */
class RecordingLog implements EventLog {
  readonly batches: Batch[] = [];
  constructor(private readonly inner: EventLog) {}
  get name() {
    return this.inner.name;
  }
  async append(sessionId: string, expectedSeq: number, drafts: DraftEvent[]): Promise<SessionEvent[]> {
    const events = await this.inner.append(sessionId, expectedSeq, drafts);
    this.batches.push({ sessionId, expectedSeq, events: events.map(({ position: _p, ...e }) => e as SessionEvent) });
    return events;
  }
  readSession(sessionId: string, options?: { afterSeq?: number; limit?: number }) {
    return this.inner.readSession(sessionId, options);
  }
  lastSeq(sessionId: string) {
    return this.inner.lastSeq(sessionId);
  }
  readAll(options?: { after?: number; limit?: number }) {
    return this.inner.readAll(options);
  }
  readPages(options?: ReadPagesOptions) {
    return this.inner.readPages(options);
  }
  head() {
    return this.inner.head();
  }
  subscribe(options: SubscribeOptions): Subscription {
    return this.inner.subscribe(options);
  }
  close() {
    return this.inner.close();
  }
}

/** A clock that moves 1 ms per reading, so times are distinct and deterministic. */
function steppingClock(start: number): Clock {
  let now = start;
  return { now: () => now++, setTimeout: systemClock.setTimeout, clearTimeout: systemClock.clearTimeout };
}

export const TEMPLATE_START_TIME = 1_700_000_000_000;

/** Runs two real echo turns (3 steps each) on one session and returns their appends. */
export async function captureTemplate(): Promise<Template> {
  const db = openDatabase(':memory:');
  migrate(db);
  const log = new RecordingLog(new SqliteEventLog(db));
  const engine = await openEngine({
    file: ':memory:',
    log,
    runner: echoRunner(),
    ids: sequentialIds(MARK),
    clock: steppingClock(TEMPLATE_START_TIME),
  });
  const session = `ses_${MARK}`;
  try {
    await engine.admit(session, { prompt: BENCH_PROMPT });
    await engine.awaitIdle(session);
    const split = log.batches.length;
    await engine.admit(session, { prompt: BENCH_PROMPT });
    await engine.awaitIdle(session);
    const first = log.batches.slice(0, split);
    const later = log.batches.slice(split);
    const count = (bs: Batch[]) => bs.reduce((n, b) => n + b.events.length, 0);
    if (later.length === 0 || later[later.length - 1]!.events.at(-1)?.type !== 'execution.settled') {
      throw new Error(`the template turn did not settle: ${log.batches.map((b) => b.events.map((e) => e.type).join('+')).join(', ')}`);
    }
    return { first, later, firstLength: count(first), laterLength: count(later), eventsPerTurn: count(later), appendsPerTurn: later.length };
  } finally {
    await engine.close();
    await log.close();
    db.close();
  }
}

function rewrite(value: unknown, token: string): unknown {
  if (typeof value === 'string') return value.includes(MARK) ? value.replaceAll(MARK, token) : value;
  if (Array.isArray(value)) return value.map((v) => rewrite(v, token));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = rewrite(v, token);
    return out;
  }
  return value;
}

export const sessionName = (k: number) => `ses_b${k}`;

/** The template's turn `turn` (0-based) of session number `k`, as committed batches. */
export function cloneTurn(t: Template, k: number, turn: number, timeBase = 0): Batch[] {
  const source = turn === 0 ? t.first : t.later;
  const seqShift = turn === 0 ? 0 : (turn - 1) * t.laterLength;
  const token = `k${k}t${turn}_`;
  const sessionId = sessionName(k);
  const timeShift = timeBase + (turn * 1_000_000 + k) * 10;
  return source.map((b) => ({
    sessionId,
    expectedSeq: b.expectedSeq + seqShift,
    events: b.events.map((e) => {
      const payload = rewrite(e.payload, token) as Record<string, unknown>;
      if (typeof payload.assistantSeq === 'number' && payload.assistantSeq >= 0) payload.assistantSeq += seqShift;
      if (typeof payload.expiresAt === 'number') payload.expiresAt += timeShift;
      return { ...e, id: e.id.replaceAll(MARK, token), sessionId, seq: e.seq + seqShift, time: e.time + timeShift, payload } as SessionEvent;
    }),
  }));
}

export interface CorpusShape {
  sessions: number;
  turns: number;
  concurrency?: number;
  firstSession?: number;
}

/** Committed batches, in commit order, for `sessions` x `turns` echo turns (lazily). */
export function* corpus(t: Template, shape: CorpusShape): Generator<Batch> {
  const wave = shape.concurrency ?? 64;
  const first = shape.firstSession ?? 0;
  for (let turn = 0; turn < shape.turns; turn++) {
    for (let w = 0; w < shape.sessions; w += wave) {
      const turns: Batch[][] = [];
      for (let k = w; k < Math.min(shape.sessions, w + wave); k++) turns.push(cloneTurn(t, first + k, turn));
      const appends = Math.max(...turns.map((b) => b.length));
      for (let a = 0; a < appends; a++) for (const bs of turns) if (bs[a]) yield bs[a]!;
    }
  }
}

export function corpusEvents(t: Template, shape: CorpusShape): number {
  return shape.sessions * (t.firstLength + (shape.turns - 1) * t.laterLength);
}

/** Shape for about `events` events: turns per session fixed, sessions as many as needed. */
export function shapeFor(t: Template, events: number, turns = 3): CorpusShape {
  const perSession = t.firstLength + (turns - 1) * t.laterLength;
  return { sessions: Math.max(1, Math.ceil(events / perSession)), turns };
}

/** Gives batches SQLite-style positions (one per event, from `start + 1`). */
export function* withPositions(batches: Iterable<Batch>, start = 0): Generator<SessionEvent[]> {
  let position = start;
  for (const b of batches) yield b.events.map((e) => ({ ...e, position: ++position }) as SessionEvent);
}

/** Groups a stream of event arrays into pages of about `size` events (never splitting an array). */
export function* pages<T>(arrays: Iterable<T[]>, size: number): Generator<T[]> {
  let page: T[] = [];
  for (const a of arrays) {
    for (const x of a) page.push(x);
    if (page.length >= size) {
      yield page;
      page = [];
    }
  }
  if (page.length > 0) yield page;
}

/** A "typical 3-event append" for log benchmarks: step.started, text.completed, step.ended, fresh ids. */
export function stepDrafts(t: Template, unique: string): DraftEvent[] {
  const step = t.later.flatMap((b) => b.events);
  const pick = (type: string) => step.find((e) => e.type === type)!;
  return ['step.started', 'text.completed', 'step.ended'].map((type, i) => {
    const e = pick(type);
    return { id: `evt_${unique}_${i}`, type: e.type, time: e.time, payload: rewrite(e.payload, unique) } as DraftEvent;
  });
}
