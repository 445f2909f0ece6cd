/**
 * session_message: the conversation as rows. `type` is `user` (a promoted input), `assistant` (one
 * per model step, holding its text parts and tool calls) or `compaction`; `data` is JSON text whose
 * shape per type is declared below. The rules that change `data` live in message-rules.ts.
 */
import type { Delivery, Prompt, RecordedError, Usage } from '../events/catalog.ts';
import type { Db } from '../storage/sqlite/database.ts';

export interface MessageRow {
  id: string;
  session_id: string;
  type: MessageType;
  seq: number;
  time_created: number;
  time_updated: number;
  data: string;
}

export type MessageType = 'user' | 'assistant' | 'compaction';

export interface UserData {
  /** The prompt as admitted: a string, or its parts (text, images, files, JSON). */
  prompt: Prompt;
  delivery: Delivery;
  /** The execution whose turn promoted the input. */
  executionId: string;
}

export type AssistantStatus = 'running' | 'completed' | 'failed' | 'recovered';
/** A text part, or the model's reasoning text where the server sends it. */
export interface TextPart {
  id: string;
  type: 'text' | 'reasoning';
  text: string;
}
/**
 * pending -> running -> completed | error; a call that needs a person's approval: pending ->
 * awaiting_approval -> approved (then running, in the execution that resumed the turn) | denied |
 * cancelled (its turn was cancelled, or failed, while it waited).
 */
export type ToolStatus = 'pending' | 'awaiting_approval' | 'approved' | 'denied' | 'cancelled' | 'running' | 'completed' | 'error';
/** A person's decision on a call that needed approval. */
export interface ToolDecision {
  outcome: 'approved' | 'denied' | 'cancelled';
  reason?: string;
  time: number;
}
export interface ToolData {
  callId: string;
  name: string;
  input: unknown;
  durable: boolean;
  idempotencyKey?: string;
  state: ToolStatus;
  output?: unknown;
  error?: RecordedError;
  decision?: ToolDecision;
  /** An approved call (or a session tool call) runs in the execution that resumed its turn: that execution's id. */
  runBy?: string;
  /** A session tool call: the child session whose turn runs it (the call stays pending until its answer comes). */
  child?: string;
}
export interface AssistantData {
  executionId: string;
  step: number;
  status: AssistantStatus;
  parts: TextPart[];
  tools: ToolData[];
  /** step.ended */
  finish?: string;
  /** step.ended: the tokens the step used, as the model server reported them */
  usage?: Usage;
  /** step.failed */
  error?: RecordedError;
  /** step.recovered */
  reason?: string;
}

export interface CompactionData {
  executionId: string;
  reason: string;
  status: 'running' | 'completed';
  summary?: string;
  usage?: Usage;
}

export type MessageData = { type: 'user'; data: UserData } | { type: 'assistant'; data: AssistantData } | { type: 'compaction'; data: CompactionData };

/** JSON text for the projection: deterministic for the same input; bigints are written as strings. */
export function toJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? 'null'; // the fast path: a replacer function costs ~10% of projection time
  } catch {
    return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) ?? 'null';
  }
}

/** A message row with its `data` parsed, typed by the row's `type`. */
export function parseMessage(row: MessageRow): MessageData & { row: MessageRow } {
  return { type: row.type, data: JSON.parse(row.data), row } as MessageData & { row: MessageRow };
}

/** A message as the rules see it inside a batch: the row with `data` parsed (rules cast it by `type`). */
export interface CachedMessage extends Omit<MessageRow, 'data'> {
  data: unknown;
}

/**
 * The message rows of one batch, write-behind: `get` reads a row once and keeps it parsed, `insert`
 * and `update` change only that copy, and `flush` writes each touched message once (an INSERT or an
 * UPDATE with its final data) before the batch's checkpoint, inside the batch's transaction.
 * `discard` forgets the batch (after a flush, or when the batch throws and rolls back).
 */
export function messageRows(db: Db) {
  const select = db.prepare('SELECT * FROM session_message WHERE session_id = ? AND id = ?');
  const insert = db.prepare(`INSERT INTO session_message (id, session_id, type, seq, time_created, time_updated, data)
                             VALUES (?, ?, ?, ?, ?, ?, ?)`);
  const update = db.prepare('UPDATE session_message SET data = ?, time_updated = ? WHERE session_id = ? AND id = ?');
  const clear = db.prepare('DELETE FROM session_message');
  /** session id -> message id -> message: ids are unique per session only. */
  const cache = new Map<string, Map<string, CachedMessage>>();
  const inserted = new Set<CachedMessage>();
  const updated = new Set<CachedMessage>();
  const remember = (m: CachedMessage): void => {
    let session = cache.get(m.session_id);
    if (!session) cache.set(m.session_id, (session = new Map()));
    session.set(m.id, m);
  };
  const discard = (): void => {
    cache.clear();
    inserted.clear();
    updated.clear();
  };
  return {
    get(sessionId: string, id: string): CachedMessage | undefined {
      const cached = cache.get(sessionId)?.get(id);
      if (cached) return cached;
      const row = select.get(sessionId, id) as MessageRow | undefined;
      if (!row) return undefined;
      const m: CachedMessage = { ...row, data: JSON.parse(row.data) };
      remember(m);
      return m;
    },
    /** A new message (the caller checked with `get` that the id is free in the session). */
    insert(m: CachedMessage): void {
      remember(m);
      inserted.add(m);
    },
    update(m: CachedMessage, data: unknown, time: number): void {
      m.data = data;
      m.time_updated = time;
      if (!inserted.has(m)) updated.add(m);
    },
    flush(): void {
      for (const m of inserted) insert.run(m.id, m.session_id, m.type, m.seq, m.time_created, m.time_updated, toJson(m.data));
      for (const m of updated) update.run(toJson(m.data), m.time_updated, m.session_id, m.id);
      discard();
    },
    discard,
    clearAll: (): void => void clear.run(),
  };
}
