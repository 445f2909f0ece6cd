/**
 * The projected rows of a session at a sequence, for time travel: the real Projector applied to that
 * prefix of its events in an in-memory database, read back bounded (ROWS_LIMIT), starting from a mark
 * or a projection image (why: docs/inspector.md#rows-at-a-sequence).
 */
import { ErrorCode, SessiondError } from '../errors.ts';
import Database from 'better-sqlite3';
import type { Clock } from '../clock.ts';
import type { EventLog } from '../events/event-log.ts';
import { Projector } from '../projector/index.ts';
import type { ExecutionRow } from '../projector/execution-rows.ts';
import type { InputRow } from '../projector/input-rows.ts';
import type { MessageRow } from '../projector/message-rows.ts';
import type { RecoveryRow } from '../projector/recovery-rows.ts';
import { migrate } from '../storage/sqlite/migrate.ts';
import type { Db } from '../storage/sqlite/database.ts';
import type { ConversationMarks } from './conversation-marks.ts';

/** Rows of one session at a sequence; any JSON-able value. */
export type RowsAt = (sessionId: string, seq: number) => unknown | Promise<unknown>;

export const ROWS_CHECKPOINT_EVERY = 10_000;
export const ROWS_SESSIONS = 2;
export const ROWS_LIMIT = 50;

export interface RowsView {
  sessionId: string;
  executions: ExecutionRow[];
  recoveries: RecoveryRow[];
  /** The latest `limit` inputs, in admission order. */
  inputs: InputRow[];
  /** The latest `limit` messages, in sequence order. */
  messages: MessageRow[];
  /** How many rows each table holds for the session (inputs and messages show only the latest). */
  counts: { executions: number; recoveries: number; inputs: number; messages: number };
  limit: number;
}

interface Image {
  seq: number;
  image: Buffer;
}

export interface RowsOptions {
  log: EventLog;
  clock?: Clock;
  /** Keep a projection image every this many events (default ROWS_CHECKPOINT_EVERY). */
  every?: number;
  /** Keep images for this many sessions, the most recently travelled (default ROWS_SESSIONS). */
  sessions?: number;
  /** The sessions' marks (conversation-marks.ts, fed by the log's subscription): rows are then projected from a mark, not from seq 0. */
  marks?: Pick<ConversationMarks, 'marksOf'>;
}

/** Events read from the log per call when projecting from a mark. */
const READ_PAGE = 5_000;

/** `RowsAt` through the projector, with projection checkpoints. */
export function projectedRowsAt(options: RowsOptions): (sessionId: string, seq: number) => Promise<RowsView> {
  const { log } = options;
  const every = options.every ?? ROWS_CHECKPOINT_EVERY;
  const keep = options.sessions ?? ROWS_SESSIONS;
  const images = new Map<string, Image[]>();

  const imagesOf = (sessionId: string): Image[] => {
    const list = images.get(sessionId) ?? [];
    images.delete(sessionId); // most recently used last
    images.set(sessionId, list);
    while (images.size > keep) images.delete(images.keys().next().value!);
    return list;
  };

  // per session (the `sessions` most recently travelled): the projection from a mark, as an image
  const windows = new Map<string, { from: number; seq: number; image: Buffer }>();
  const windowOf = (sessionId: string) => {
    const kept = windows.get(sessionId);
    windows.delete(sessionId); // most recently used last
    if (kept) windows.set(sessionId, kept);
    while (windows.size > keep) windows.delete(windows.keys().next().value!);
    return kept;
  };

  /**
   * From a mark: the rows made before it are final there, so only the events after the latest mark
   * with ROWS_LIMIT inputs and messages made since it are projected, into a fresh database, and its
   * counts are added to the mark's. Undefined when no mark serves: the session has no mark before
   * `seq`, had a recovery row before the mark (every one is shown), or the log no longer has the
   * mark's event (the session was deleted and written again).
   */
  const fromMark = async (sessionId: string, seq: number): Promise<RowsView | undefined> => {
    const list = options.marks?.marksOf(sessionId) ?? [];
    let at = -1;
    while (at + 1 < list.length && list[at + 1]!.seq <= seq) at++;
    if (at < 0) return undefined;
    const head = list[at]!.rows;
    let from = at;
    while (from >= 0 && (head.inputs - list[from]!.rows.inputs < ROWS_LIMIT || head.messages - list[from]!.rows.messages < ROWS_LIMIT)) from--;
    if (from < 0) return undefined; // near the start: from seq 0 is as short
    const mark = list[from]!;
    if (mark.rows.recoveries > 0) return undefined;
    // the log must still hold the mark's event (a session deleted and written again does not)
    const [own] = await log.readSession(sessionId, { afterSeq: mark.seq - 1, limit: 1 });
    if (own?.id !== mark.eventId) return undefined;
    // the projection last made from this mark, when it is not past seq: only what came since is projected
    const kept = windowOf(sessionId);
    const reused = kept && kept.from === mark.seq && kept.seq <= seq ? kept : undefined;
    const db = reused ? openImage(reused.image) : freshDb(options.clock);
    try {
      const projector = new Projector(db, { name: 'inspector' });
      for (let after = reused?.seq ?? mark.seq; after < seq; ) {
        const limit = Math.min(READ_PAGE, seq - after);
        const events = await log.readSession(sessionId, { afterSeq: after, limit });
        if (events.length !== limit)
          throw new SessiondError(
            ErrorCode.InconsistentStream,
            `Session ${sessionId}: ${log.name} returned ${events.length} events after seq ${after}, expected ${limit}.`,
          );
        projector.apply(events.map((e) => ({ ...e, position: e.seq })));
        after += limit;
      }
      if (!reused || reused.seq < seq) windows.set(sessionId, { from: mark.seq, seq, image: db.serialize() });
      const rows = boundedRows(db, sessionId);
      rows.counts.inputs += mark.rows.inputs;
      rows.counts.messages += mark.rows.messages;
      return rows;
    } finally {
      db.close();
    }
  };

  return async (sessionId, seq) => {
    const marked = await fromMark(sessionId, seq);
    if (marked) return marked;
    const list = imagesOf(sessionId);
    let base: Image | undefined;
    for (const i of list) if (i.seq <= seq) base = i;
    const db = base ? openImage(base.image) : freshDb(options.clock);
    try {
      const projector = new Projector(db, { name: 'inspector' });
      let at = base?.seq ?? 0;
      while (at < seq) {
        const next = Math.min(seq, (Math.floor(at / every) + 1) * every);
        const events = await log.readSession(sessionId, { afterSeq: at, limit: next - at });
        if (events.length !== next - at)
          throw new SessiondError(
            ErrorCode.InconsistentStream,
            `Session ${sessionId}: ${log.name} returned ${events.length} events after seq ${at}, expected ${next - at}.`,
          );
        projector.apply(events.map((e) => ({ ...e, position: e.seq })));
        at = next;
        if (at % every === 0 && !list.some((i) => i.seq === at)) {
          list.push({ seq: at, image: db.serialize() });
          list.sort((a, b) => a.seq - b.seq);
        }
      }
      return boundedRows(db, sessionId);
    } finally {
      db.close();
    }
  };
}

/** An empty migrated database, serialized once per clock: a fresh projection opens it instead of migrating again. */
const emptyImages = new WeakMap<Clock | typeof NO_CLOCK, Buffer>();
const NO_CLOCK = {};

function freshDb(clock: Clock | undefined): Db {
  const key = clock ?? NO_CLOCK;
  let image = emptyImages.get(key);
  if (!image) {
    const db = new Database(':memory:');
    migrate(db, clock ? { clock } : {});
    image = db.serialize();
    db.close();
    emptyImages.set(key, image);
  }
  return openImage(image);
}

function openImage(image: Buffer): Db {
  const db = new Database(image);
  db.pragma('foreign_keys = ON');
  return db;
}

function boundedRows(db: Db, sessionId: string): RowsView {
  const count = (table: string) => db.prepare(`SELECT count(*) FROM ${table} WHERE session_id = ?`).pluck().get(sessionId) as number;
  return {
    sessionId,
    executions: db.prepare('SELECT * FROM session_execution WHERE session_id = ? ORDER BY time_created, id').all(sessionId) as ExecutionRow[],
    recoveries: db.prepare('SELECT * FROM session_recovery WHERE session_id = ? ORDER BY time_created, execution_id').all(sessionId) as RecoveryRow[],
    inputs: (
      db.prepare('SELECT * FROM session_input WHERE session_id = ? ORDER BY admitted_seq DESC, id DESC LIMIT ?').all(sessionId, ROWS_LIMIT) as InputRow[]
    ).reverse(),
    messages: (
      db.prepare('SELECT * FROM session_message WHERE session_id = ? ORDER BY seq DESC, id DESC LIMIT ?').all(sessionId, ROWS_LIMIT) as MessageRow[]
    ).reverse(),
    counts: {
      executions: count('session_execution'),
      recoveries: count('session_recovery'),
      inputs: count('session_input'),
      messages: count('session_message'),
    },
    limit: ROWS_LIMIT,
  };
}
