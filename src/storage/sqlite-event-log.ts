/**
 * The embedded event log: the `event` table of a sessiond SQLite database.
 *
 * Appends run in an IMMEDIATE transaction (one writer at a time across processes), check the
 * session's last sequence against `expectedSeq`, and insert the batch; the unique
 * `event_aggregate_seq_idx` backs the check. Subscribers in this process are woken on commit;
 * commits from other processes are noticed by polling `PRAGMA data_version` (a cheap read that
 * changes when another connection commits), backing off from 5 ms to `maxPollMs` while idle.
 */
import { ErrorCode, SessiondError } from '../errors.ts';
import { validateId } from '../ids.ts';
import { catalog, isDurable } from '../events/catalog.ts';
import { pack, unpack, DEFAULT_MAX_PAYLOAD_BYTES } from '../events/codec.ts';
import { prepareBatch } from '../events/prepare-batch.ts';
import type { DraftEvent, SessionEvent } from '../events/envelope.ts';
import {
  SequenceConflictError, duplicateEventError, logClosedError,
  type EventLog, type SubscribeOptions, type Subscription,
} from '../events/event-log.ts';
import type { Db } from './sqlite.ts';
import { ChangeNotifier } from './change-notifier.ts';

export const DEFAULT_READ_BATCH = 1000;
export const DEFAULT_MAX_POLL_MS = 100;

interface EventRow { position: number; id: string; aggregate_id: string; seq: number; type: string; version: number; time: number; data: Buffer }

export interface SqliteEventLogOptions {
  maxPayloadBytes?: number;
  /** Longest wait between checks for other processes' commits while idle. */
  maxPollMs?: number;
}

export class SqliteEventLog implements EventLog {
  readonly name: string;
  private readonly notifier: ChangeNotifier;
  private readonly maxPayloadBytes: number;
  private closed = false;
  private readonly stmts;

  constructor(private readonly db: Db, options: SqliteEventLogOptions = {}) {
    this.name = `sqlite:${db.name}`;
    this.maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    this.notifier = new ChangeNotifier(db, options.maxPollMs ?? DEFAULT_MAX_POLL_MS);
    this.stmts = {
      lastSeq: db.prepare('SELECT COALESCE(MAX(seq), 0) AS seq FROM event WHERE aggregate_id = ?').pluck(),
      insert: db.prepare('INSERT INTO event (id, aggregate_id, seq, type, version, time, data) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      byId: db.prepare('SELECT * FROM event WHERE id = ?'),
      session: db.prepare('SELECT * FROM event WHERE aggregate_id = ? AND seq > ? ORDER BY seq LIMIT ?'),
      all: db.prepare('SELECT * FROM event WHERE position > ? ORDER BY position LIMIT ?'),
      head: db.prepare('SELECT COALESCE(MAX(position), 0) FROM event').pluck(),
    };
  }

  async append(sessionId: string, expectedSeq: number, drafts: DraftEvent[]): Promise<SessionEvent[]> {
    return this.appendSync(sessionId, expectedSeq, drafts);
  }

  /** The synchronous core of `append`, usable inside a caller's own transaction. */
  appendSync(sessionId: string, expectedSeq: number, drafts: DraftEvent[]): SessionEvent[] {
    if (this.closed) throw logClosedError(this.name);
    const parsed = prepareBatch(sessionId, expectedSeq, drafts, this.maxPayloadBytes);
    const run = this.db.transaction((): SessionEvent[] => {
      const actual = this.stmts.lastSeq.get(sessionId) as number;
      if (actual !== expectedSeq) {
        const retried = this.findRetry(sessionId, expectedSeq, parsed);
        if (retried) return retried;
        throw new SequenceConflictError(sessionId, expectedSeq, actual);
      }
      return parsed.map((d, i) => {
        const seq = expectedSeq + i + 1;
        const version = catalog[d.type].version;
        let info;
        try {
          info = this.stmts.insert.run(d.id, sessionId, seq, d.type, version, d.time, pack(d.payload));
        } catch (err) {
          if ((err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE' || (err as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
            throw duplicateEventError(sessionId, [d.id]);
          }
          throw err;
        }
        return { id: d.id, type: d.type, version, sessionId, seq, time: d.time, payload: d.payload, position: Number(info.lastInsertRowid) } as SessionEvent;
      });
    });
    const committed = run.immediate();
    this.notifier.notify();
    return committed;
  }

  /** An append whose events are already committed, exactly, is a retry: return what was written. */
  private findRetry(sessionId: string, expectedSeq: number, drafts: DraftEvent[]): SessionEvent[] | undefined {
    const rows = drafts.map((d) => this.stmts.byId.get(d.id) as EventRow | undefined);
    if (rows.every((r) => r === undefined)) return undefined;
    const exact = rows.every((r, i) => r !== undefined && r.aggregate_id === sessionId && r.seq === expectedSeq + i + 1);
    if (!exact) throw duplicateEventError(sessionId, rows.filter((r) => r !== undefined).map((r) => r!.id));
    return rows.map((r) => toEvent(r!));
  }

  async readSession(sessionId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<SessionEvent[]> {
    return this.readSessionSync(sessionId, options);
  }

  readSessionSync(sessionId: string, options: { afterSeq?: number; limit?: number } = {}): SessionEvent[] {
    validateId(sessionId, 'session id');
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
        const batch = this.closed ? [] : this.readAllSync({ after: position, limit: DEFAULT_READ_BATCH });
        if (batch.length === 0) {
          await changed;
          continue;
        }
        await options.onBatch(batch);
        position = batch[batch.length - 1]!.position!;
      }
    };
    const done = pump().catch((err) => { stopped = true; onError(err); });
    const sub = {
      get position() { return position; },
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
    this.notifier.stop();
  }
}

function toEvent(row: EventRow): SessionEvent {
  return {
    id: row.id, type: row.type, version: row.version, sessionId: row.aggregate_id, seq: row.seq, time: row.time,
    payload: unpack(row.data), position: row.position,
  } as SessionEvent;
}
