/**
 * The embedded event log: the `event_batch` table of a sessiond SQLite database, one row per append
 * (event-rows.ts). Fenced appends in IMMEDIATE transactions, group-committed across sessions; other
 * processes' commits noticed through `PRAGMA data_version`. Durability and why:
 * docs/architecture.md#storage.
 */
import { resolve } from 'node:path';
import { systemClock, type Clock } from '../../clock.ts';
import { ErrorCode, SessiondError, messageOf, SequenceConflictError } from '../../errors.ts';
import { validateId } from '../../ids.ts';
import { catalog } from '../../events/catalog.ts';
import { checkPayloadSize, eventFromFrame, pack, unpack, DEFAULT_MAX_PAYLOAD_BYTES } from '../../events/codec.ts';
import {
  type BatchRow,
  batchWriter,
  type EventRow,
  type Frame,
  highPositionReader,
  isUniqueViolation,
  rowsOfBatch,
  storedEvents,
  type StoredEvents,
} from './event-rows.ts';
import { prepareBatch } from '../../events/prepare-batch.ts';
import type { DraftEvent, SessionEvent } from '../../events/envelope.ts';
import {
  duplicateEventError,
  logClosedError,
  pageSizeOption,
  type EventLog,
  type ReadPagesOptions,
  type SubscribeOptions,
  type Subscription,
} from '../../events/event-log.ts';
import type { Db } from './database.ts';
import type BetterSqlite3 from 'better-sqlite3';
import { ChangeNotifier } from './change-notifier.ts';
import { commitHooks, type CommitHook } from './commit-hooks.ts';
import { readsBackAsIs } from '../../events/reads-back.ts';
import { sessionTails, type SessionTails } from './session-tails.ts';

export const DEFAULT_READ_BATCH = 1000;
export const DEFAULT_MAX_POLL_MS = 100;

interface QueuedAppend {
  sessionId: string;
  expectedSeq: number;
  drafts: DraftEvent[];
  resolve: (events: SessionEvent[]) => void;
  reject: (err: unknown) => void;
}

export type { EventRow } from './event-rows.ts';

export interface SqliteEventLogOptions {
  maxPayloadBytes?: number;
  /** Longest wait between checks for other processes' commits while idle. */
  maxPollMs?: number;
  /** The clock the checks are timed on (default the system's). */
  clock?: Clock;
}

/** Events of its own commits a log keeps for its subscribers (between this and twice as many). */
const RECENT_EVENTS = 4096;
export class SqliteEventLog implements EventLog {
  readonly name: string;
  private readonly notifier: ChangeNotifier;
  private readonly clock: Clock;
  private readonly maxPayloadBytes: number;
  private closed = false;
  private readonly stmts;
  /** The file's events, per event, whichever layout the file has (event-rows.ts). */
  private readonly stored: StoredEvents;
  /** Prepared at the first append: read-only commands open databases of older schemas (no event_batch). */
  private writeBatch?: ReturnType<typeof batchWriter>;
  private lastBatchStmt?: BetterSqlite3.Statement;
  private readHighPosition?: () => number;
  private byFirstIdStmt?: BetterSqlite3.Statement;
  private queue: QueuedAppend[] = [];
  private readonly savepoint: BetterSqlite3.Transaction<(hook: CommitHook, events: readonly SessionEvent[]) => void>;
  private readonly writeOne: BetterSqlite3.Transaction<(sessionId: string, expectedSeq: number, parsed: DraftEvent[]) => SessionEvent[]>;
  private readonly writeGroup: BetterSqlite3.Transaction<
    (group: QueuedAppend[]) => { outcomes: ({ events: SessionEvent[] } | { error: unknown })[]; version: number }
  >;
  /**
   * The latest events this handle committed, as one run of consecutive positions: `recent[i]` is the
   * event stored at position `recent[0].position + i`. A subscriber in this process reads its next
   * batch from here instead of reading back and decoding what was just written; an event of another
   * process breaks the run (its position is missing), and from there subscribers read the file.
   */
  private recent: SessionEvent[] = [];
  /** The events this group wrote (not a retry's, already committed), in position order, as the file gives them: for the commit hooks and `tails`. */
  private groupEvents: SessionEvent[] = [];
  /** The connection's session tails (session-tails.ts): reads after them and appends expecting them skip the query. */
  private readonly tails: SessionTails;
  /** In a group's transaction: data_version at its start, and the sequence each session it appended to is now at. */
  private groupVersion = -1;
  /** In a group's transaction: the highest position handed out (the next batch ends past it). */
  private groupHigh = 0;
  /** In a group's transaction: each session appended to, its last sequence and the ids of its last append. */
  private readonly groupTails = new Map<string, Tail>();
  /**
   * Group commit at work: transactions written and the appends they carried; `fromRecent`: subscriber
   * batches served from `recent`; `knownTail`: session reads answered without a query (see `tails`);
   * `seqReads`: appends whose session's last sequence was read from the file (the rest knew it).
   */
  readonly stats = { groups: 0, appends: 0, fromRecent: 0, knownTail: 0, seqReads: 0 };

  constructor(
    private readonly db: Db,
    options: SqliteEventLogOptions = {},
  ) {
    // the file's absolute path: the same log whichever way a process names it (the inspector's index is kept by it)
    this.name = `sqlite:${db.memory ? db.name : resolve(db.name)}`;
    this.maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    this.clock = options.clock ?? systemClock;
    this.notifier = new ChangeNotifier(db, options.maxPollMs ?? DEFAULT_MAX_POLL_MS, this.clock);
    this.stored = storedEvents(db);
    this.stmts = {
      dataVersion: db.prepare('PRAGMA data_version').pluck(),
    };
    this.tails = sessionTails(db);
    this.writeOne = db.transaction((sessionId: string, expectedSeq: number, parsed: DraftEvent[]) => this.write(sessionId, expectedSeq, parsed));
    this.savepoint = db.transaction((hook: CommitHook, events: readonly SessionEvent[]) => hook(events));
    this.writeGroup = db.transaction((group: QueuedAppend[]) => {
      this.groupEvents = [];
      this.groupTails.clear();
      // read under the write lock: no other connection commits between this and our COMMIT
      this.groupVersion = this.stmts.dataVersion.get() as number;
      this.groupHigh = this.readHigh();
      const outcomes = group.map((p) => {
        try {
          return { events: this.writeOne(p.sessionId, p.expectedSeq, p.drafts) }; // nested: a savepoint per append
        } catch (error) {
          return { error }; // what it wrote was rolled back with its savepoint (and never reached groupEvents)
        }
      });
      this.runCommitHooks();
      return { outcomes, version: this.groupVersion };
    });
  }

  /**
   * Group commit: appends that arrive while the event loop is busy (every session's runner, heartbeat,
   * admission...) are written together at the next turn of the loop, in one IMMEDIATE transaction:
   * one commit, one fsync under FULL. Each append is still checked against its own expected sequence
   * inside the transaction, in a savepoint of its own, so a conflict or a reused id fails only that
   * append. If the transaction itself cannot be had (the database locked past the busy timeout),
   * every append of the group fails with that error and nothing of it is written.
   */
  async append(sessionId: string, expectedSeq: number, drafts: DraftEvent[]): Promise<SessionEvent[]> {
    if (this.closed) throw logClosedError(this.name);
    // sizes are checked on the bytes `write` packs anyway (one pack per payload)
    const parsed = prepareBatch(sessionId, expectedSeq, drafts, { sizes: 'deferred' });
    return new Promise<SessionEvent[]>((resolve, reject) => {
      this.queue.push({ sessionId, expectedSeq, drafts: parsed, resolve, reject });
      if (this.queue.length === 1) setImmediate(() => this.flush());
    });
  }

  /** Writes the queued appends in one transaction, then settles each. */
  private flush(): void {
    const group = this.queue;
    this.queue = [];
    if (group.length === 0) return;
    let outcomes: ({ events: SessionEvent[] } | { error: unknown })[];
    let version: number;
    try {
      ({ outcomes, version } = this.writeGroup.immediate(group));
    } catch (err) {
      for (const p of group) p.reject(err);
      return;
    }
    for (const [sessionId, tail] of this.groupTails) this.tails.remember(sessionId, tail.seq, version, tail.ids);
    this.stats.groups++;
    this.stats.appends += group.length;
    for (const o of outcomes) if ('events' in o) this.remember(o.events);
    this.notifier.notify();
    group.forEach((p, i) => {
      const o = outcomes[i]!;
      if ('events' in o) p.resolve(o.events);
      else p.reject(o.error);
    });
  }

  /** The connection's commit hooks (commit-hooks.ts), each in a savepoint, with the group's events as the file gives them. */
  private runCommitHooks(): void {
    const hooks = commitHooks(this.db);
    if (hooks.size === 0 || this.groupEvents.length === 0) return;
    for (const hook of hooks) {
      try {
        this.savepoint(hook, this.groupEvents);
      } catch {
        // rolled back alone: the hook's owner notices (a projector is then behind and its follower catches up)
      }
    }
  }

  /** Adds committed events to the run of recent ones (a retry's old events, or a gap, start a new run). */
  private remember(events: SessionEvent[]): void {
    for (const committed of events) {
      const e = storedForm.get(committed) ?? committed;
      const last = this.recent[this.recent.length - 1];
      if (last !== undefined && e.position! <= last.position!) continue; // a retry: already committed before
      if (last !== undefined && e.position === last.position! + 1) this.recent.push(e);
      else this.recent = [e];
    }
    if (this.recent.length > RECENT_EVENTS * 2) this.recent = this.recent.slice(-RECENT_EVENTS);
  }

  /** Up to `limit` events after position `after` from the recent run, or undefined when it does not hold the next one. */
  private fromRecent(after: number, limit: number): SessionEvent[] | undefined {
    const first = this.recent[0]?.position;
    if (first === undefined || after + 1 < first || after + 1 > first + this.recent.length - 1) return undefined;
    this.stats.fromRecent++;
    return this.recent.slice(after + 1 - first, after + 1 - first + limit);
  }

  /** One append inside a transaction (a savepoint when nested): check the sequence and ids, insert the batch as one row. */
  private write(sessionId: string, expectedSeq: number, parsed: DraftEvent[]): SessionEvent[] {
    if (!this.stored.batches) throw olderSchemaError(this.name);
    const known = this.knownTail(sessionId);
    const tail = known !== undefined && known.seq === expectedSeq ? known : this.readTail(sessionId);
    if (tail.seq !== expectedSeq) {
      const retried = this.findRetry(sessionId, expectedSeq, parsed, tail);
      if (retried) return retried;
      throw new SequenceConflictError(sessionId, expectedSeq, tail.seq);
    }
    // ids of the session's last append reused in the next one (as the NATS log checks them; an
    // earlier append's first id is refused by the file's index on it)
    const reused = parsed.filter((d) => tail.ids.includes(d.id));
    if (reused.length > 0)
      throw duplicateEventError(
        sessionId,
        reused.map((d) => d.id),
      );
    const writeBatch = (this.writeBatch ??= batchWriter(this.db));
    const committedAt = this.clock.now();
    const n = parsed.length;
    const frames: Frame[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const d = parsed[i]!;
      const data = pack(d.payload);
      if (data.byteLength > this.maxPayloadBytes) checkPayloadSize(d, this.maxPayloadBytes); // throws, naming the event and the limit
      frames[i] = [d.id, d.type, catalog[d.type].version, d.time, data];
    }
    const lastSeq = expectedSeq + n;
    const last = this.groupHigh + n;
    try {
      writeBatch(last, sessionId, lastSeq, frames, committedAt);
    } catch (err) {
      // the first id of an earlier append (the file keeps those unique, as NATS keeps message ids)
      if (isUniqueViolation(err)) throw duplicateEventError(sessionId, [parsed[0]!.id]);
      throw err;
    }
    this.groupHigh = last;
    const first = last - n + 1;
    const events = frames.map(([id, type, version, time, data], i) => {
      const d = parsed[i]!;
      const position = first + i;
      const seq = expectedSeq + i + 1;
      const event = { id, type, version, sessionId, seq, time, payload: d.payload, position, committedAt } as SessionEvent;
      // what a reader of the file gets: the same objects when the payload reads back as it is
      if (!readsBackAsIs(d.payload)) {
        storedForm.set(event, toEvent({ position, id, aggregate_id: sessionId, seq, type, version, time, data, committed_at: committedAt }));
      }
      return event;
    });
    for (const e of events) this.groupEvents.push(storedForm.get(e) ?? e);
    this.groupTails.set(sessionId, { seq: lastSeq, ids: events.map((e) => e.id) });
    return events;
  }

  /** The highest position the file ever handed out (AUTOINCREMENT's: deleted newest positions are not reused). */
  private readHigh(): number {
    if (!this.stored.batches) return 0;
    this.readHighPosition ??= highPositionReader(this.db);
    return this.readHighPosition();
  }

  /**
   * The session's last sequence and last append's ids without a query, when this connection's own
   * commits tell them: appended earlier in this group, or kept from a commit after which no other
   * connection committed. Trusted only when it is what the append expects; any other answer is read.
   */
  private knownTail(sessionId: string): Tail | undefined {
    const inGroup = this.groupTails.get(sessionId);
    if (inGroup !== undefined) return inGroup;
    const tail = this.tails.get(sessionId);
    return tail !== undefined && tail.version === this.groupVersion ? tail : undefined;
  }

  /** The session's last sequence and its last append's ids, read from the file. */
  private readTail(sessionId: string): Tail {
    this.stats.seqReads++;
    this.lastBatchStmt ??= this.db.prepare('SELECT * FROM event_batch WHERE aggregate_id = ? ORDER BY last_seq DESC LIMIT 1');
    const row = this.lastBatchStmt.get(sessionId) as BatchRow | undefined;
    return row ? { seq: row.last_seq, ids: rowsOfBatch(row).map((r) => r.id) } : NO_TAIL;
  }

  /**
   * The append's events already committed, exactly, right after `expectedSeq`: a retry, answered
   * with what was written. Its ids among those events, the session's last append or the first ids
   * of the file's appends: reused ids.
   */
  private findRetry(sessionId: string, expectedSeq: number, drafts: DraftEvent[], tail: Tail): SessionEvent[] | undefined {
    const rows = this.stored.session(sessionId, expectedSeq, drafts.length);
    if (rows.length === drafts.length && rows.every((r, i) => r.id === drafts[i]!.id)) return rows.map(toEvent);
    this.byFirstIdStmt ??= this.db.prepare('SELECT 1 FROM event_batch WHERE first_id = ?').pluck();
    const reused = drafts
      .filter((d) => tail.ids.includes(d.id) || rows.some((r) => r.id === d.id) || this.byFirstIdStmt!.get(d.id) !== undefined)
      .map((d) => d.id);
    if (reused.length > 0) throw duplicateEventError(sessionId, reused);
    return undefined;
  }

  async readSession(sessionId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<SessionEvent[]> {
    return this.readSessionSync(sessionId, options);
  }

  readSessionSync(sessionId: string, options: { afterSeq?: number; limit?: number } = {}): SessionEvent[] {
    validateId(sessionId, 'session id');
    const tail = options.afterSeq === undefined ? undefined : this.tails.get(sessionId);
    if (tail !== undefined && tail.seq === options.afterSeq && this.stmts.dataVersion.get() === tail.version) {
      this.stats.knownTail++;
      return [];
    }
    return this.stored.session(sessionId, options.afterSeq ?? 0, options.limit ?? -1).map(toEvent);
  }

  async lastSeq(sessionId: string): Promise<number> {
    validateId(sessionId, 'session id');
    return this.stored.lastSeq(sessionId);
  }

  async readAll(options: { after?: number; limit?: number } = {}): Promise<SessionEvent[]> {
    return this.readAllSync(options);
  }

  readAllSync(options: { after?: number; limit?: number } = {}): SessionEvent[] {
    return this.stored.after(options.after ?? 0, options.limit ?? -1).map(toEvent);
  }

  /** Pages of `readAll`, each read when the previous one is done with, until one comes back empty. */
  readPages(options: ReadPagesOptions = {}): AsyncIterable<SessionEvent[]> {
    const pageSize = pageSizeOption(options.pageSize);
    const read = (after: number) => {
      if (this.closed) throw logClosedError(this.name);
      return this.readAllSync({ after, limit: pageSize });
    };
    return (async function* pages() {
      for (let page = read(options.after ?? 0); page.length > 0; page = read(page[page.length - 1]!.position!)) yield page;
    })();
  }

  async head(): Promise<number> {
    return this.stored.head();
  }

  subscribe(options: SubscribeOptions): Subscription {
    if (this.closed) throw logClosedError(this.name);
    let position = options.after ?? 0;
    let stopped = false;
    const onError = options.onError ?? ((err: unknown) => process.stderr.write(`sessiond: subscriber on ${this.name} stopped: ${String(err)}\n`));
    const pump = async () => {
      while (!stopped) {
        const changed = this.notifier.nextChange();
        const batch = this.closed ? [] : (this.fromRecent(position, DEFAULT_READ_BATCH) ?? this.readAllSync({ after: position, limit: DEFAULT_READ_BATCH }));
        if (batch.length === 0) {
          await changed;
          continue;
        }
        await options.onBatch(batch);
        position = batch[batch.length - 1]!.position!;
      }
    };
    const done = pump().catch((err) => {
      stopped = true;
      onError(err);
    });
    const sub = {
      get position() {
        return position;
      },
      close: async () => {
        stopped = true;
        this.notifier.wakeAll();
        await done;
        this.notifier.release();
      },
    };
    this.notifier.retain();
    return sub;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.flush(); // appends already accepted are written (or fail) now, while the database is open
    this.notifier.stop();
  }
}

/** A session's last sequence and the ids of its last append. */
interface Tail {
  seq: number;
  ids: readonly string[];
}

const NO_TAIL: Tail = { seq: 0, ids: [] };

function olderSchemaError(name: string): SessiondError {
  return new SessiondError(
    ErrorCode.InvalidOption,
    `Event log ${name} is a database of an older schema (events stored a row each, before schema 22), opened without migrating: it can be read, not appended to. Open it with a sessiond command that migrates it (sessiond start, sessiond migrate).`,
  );
}

/** An appended event's form as the file gives it back, where that differs from the event in hand (see `readsBackAsIs`). */
const storedForm = new WeakMap<SessionEvent, SessionEvent>();

/** A stored row as an event, through the one decoder (the same checks as every other path). */
function toEvent(row: EventRow): SessionEvent {
  let payload: unknown;
  const describe = `Event row ${row.position} (session ${row.aggregate_id}, seq ${row.seq})`;
  try {
    payload = unpack(row.data);
  } catch (err) {
    throw new SessiondError(ErrorCode.DecodeFailed, `${describe} is not a valid sessiond event: its payload is not valid msgpack (${messageOf(err)}).`, {
      cause: err,
      details: { position: row.position },
    });
  }
  return eventFromFrame(
    {
      id: row.id,
      type: row.type,
      version: row.version,
      sessionId: row.aggregate_id,
      seq: row.seq,
      time: row.time,
      payload,
      position: row.position,
      ...(typeof row.committed_at === 'number' ? { committedAt: row.committed_at } : {}),
    },
    { describe, hint: 'The database was changed by something other than sessiond: run sessiond check.' },
  );
}
