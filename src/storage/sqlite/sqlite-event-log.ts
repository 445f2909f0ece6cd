/**
 * The embedded event log: the `event` table of a sessiond SQLite database. Fenced appends in
 * IMMEDIATE transactions, group-committed across sessions; other processes' commits noticed through
 * `PRAGMA data_version`. Durability and why: docs/architecture.md#storage.
 */
import { resolve } from 'node:path';
import { systemClock, type Clock } from '../../clock.ts';
import { ErrorCode, SessiondError, messageOf, SequenceConflictError } from '../../errors.ts';
import { validateId } from '../../ids.ts';
import { catalog } from '../../events/catalog.ts';
import { checkPayloadSize, eventFromFrame, pack, unpack, DEFAULT_MAX_PAYLOAD_BYTES } from '../../events/codec.ts';
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

/** A row of the event table as better-sqlite3 returns it. */
export interface EventRow {
  position: number;
  id: string;
  aggregate_id: string;
  seq: number;
  type: string;
  version: number;
  time: number;
  data: Buffer;
  committed_at?: number | null;
}

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
  /** Prepared at the first append: read-only commands open databases of older schemas (no committed_at). */
  private insertStmt?: BetterSqlite3.Statement;
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
  private readonly groupSeqs = new Map<string, number>();
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
    this.stmts = {
      lastSeq: db.prepare('SELECT COALESCE(MAX(seq), 0) AS seq FROM event WHERE aggregate_id = ?').pluck(),
      byId: db.prepare('SELECT * FROM event WHERE id = ?'),
      session: db.prepare('SELECT * FROM event WHERE aggregate_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
      all: db.prepare('SELECT * FROM event WHERE position > ? ORDER BY position LIMIT ?'),
      head: db.prepare('SELECT COALESCE(MAX(position), 0) FROM event').pluck(),
      dataVersion: db.prepare('PRAGMA data_version').pluck(),
    };
    this.tails = sessionTails(db);
    this.writeOne = db.transaction((sessionId: string, expectedSeq: number, parsed: DraftEvent[]) => this.write(sessionId, expectedSeq, parsed));
    this.savepoint = db.transaction((hook: CommitHook, events: readonly SessionEvent[]) => hook(events));
    this.writeGroup = db.transaction((group: QueuedAppend[]) => {
      this.groupEvents = [];
      this.groupSeqs.clear();
      // read under the write lock: no other connection commits between this and our COMMIT
      this.groupVersion = this.stmts.dataVersion.get() as number;
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
    // the last event of each append is its session's tail (a later append of the same session replaces it)
    const written = this.groupEvents;
    for (let i = 0; i < written.length; i++) {
      if (written[i + 1]?.sessionId !== written[i]!.sessionId) this.tails.remember(written[i]!.sessionId, written[i]!.seq, version);
    }
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

  /** One append inside a transaction (a savepoint when nested): check the sequence, insert the batch. */
  private write(sessionId: string, expectedSeq: number, parsed: DraftEvent[]): SessionEvent[] {
    const actual = this.knownSeq(sessionId) === expectedSeq ? expectedSeq : this.readSeq(sessionId);
    if (actual !== expectedSeq) {
      const retried = this.findRetry(sessionId, expectedSeq, parsed);
      if (retried) return retried;
      throw new SequenceConflictError(sessionId, expectedSeq, actual);
    }
    const insert = (this.insertStmt ??= this.db.prepare(
      'INSERT INTO event (id, aggregate_id, seq, type, version, time, data, committed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ));
    const committedAt = this.clock.now();
    const events = parsed.map((d, i) => {
      const seq = expectedSeq + i + 1;
      const version = catalog[d.type].version;
      const data = pack(d.payload);
      if (data.byteLength > this.maxPayloadBytes) checkPayloadSize(d, this.maxPayloadBytes); // throws, naming the event and the limit
      let info: ReturnType<typeof insert.run>;
      try {
        info = insert.run(d.id, sessionId, seq, d.type, version, d.time, data, committedAt);
      } catch (err) {
        if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE' || (err as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
          throw duplicateEventError(sessionId, [d.id]);
        }
        throw err;
      }
      const position = Number(info.lastInsertRowid);
      const event = { id: d.id, type: d.type, version, sessionId, seq, time: d.time, payload: d.payload, position, committedAt } as SessionEvent;
      // what a reader of the file gets: the same objects when the payload reads back as it is
      if (!readsBackAsIs(d.payload)) {
        storedForm.set(
          event,
          toEvent({ position, id: d.id, aggregate_id: sessionId, seq, type: d.type, version, time: d.time, data: data as Buffer, committed_at: committedAt }),
        );
      }
      return event;
    });
    for (const e of events) this.groupEvents.push(storedForm.get(e) ?? e);
    this.groupSeqs.set(sessionId, expectedSeq + events.length);
    return events;
  }

  /**
   * The session's last sequence without a query, when this connection's own commits tell it: appended
   * earlier in this group, or its tail kept from a commit after which no other connection committed.
   * Trusted only when it is what the append expects; any other answer is read from the file.
   */
  private knownSeq(sessionId: string): number | undefined {
    const inGroup = this.groupSeqs.get(sessionId);
    if (inGroup !== undefined) return inGroup;
    const tail = this.tails.get(sessionId);
    return tail !== undefined && tail.version === this.groupVersion ? tail.seq : undefined;
  }

  private readSeq(sessionId: string): number {
    this.stats.seqReads++;
    return this.stmts.lastSeq.get(sessionId) as number;
  }

  /** An append whose events are already committed, exactly, is a retry: return what was written. */
  private findRetry(sessionId: string, expectedSeq: number, drafts: DraftEvent[]): SessionEvent[] | undefined {
    const rows = drafts.map((d) => this.stmts.byId.get(d.id) as EventRow | undefined);
    if (rows.every((r) => r === undefined)) return undefined;
    const exact = rows.every((r, i) => r !== undefined && r.aggregate_id === sessionId && r.seq === expectedSeq + i + 1);
    if (!exact)
      throw duplicateEventError(
        sessionId,
        rows.filter((r) => r !== undefined).map((r) => r!.id),
      );
    return rows.map((r) => toEvent(r!));
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
    const rows = this.stmts.session.all(sessionId, options.afterSeq ?? 0, options.limit ?? -1) as EventRow[];
    return rows.map(toEvent);
  }

  async lastSeq(sessionId: string): Promise<number> {
    validateId(sessionId, 'session id');
    return this.stmts.lastSeq.get(sessionId) as number;
  }

  async readAll(options: { after?: number; limit?: number } = {}): Promise<SessionEvent[]> {
    return this.readAllSync(options);
  }

  readAllSync(options: { after?: number; limit?: number } = {}): SessionEvent[] {
    const rows = this.stmts.all.all(options.after ?? 0, options.limit ?? -1) as EventRow[];
    return rows.map(toEvent);
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
    return this.stmts.head.get() as number;
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
