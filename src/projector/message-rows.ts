/**
 * session_message: the conversation as rows. `type` is `user` (a promoted input), `assistant` (one
 * per model step, holding its text parts and tool calls) or `compaction`; `data` is JSON text whose
 * shape per type is declared below. The rules that change `data` live in message-rules.ts.
 */
import type { Delivery, RecordedError } from '../events/catalog.ts';
import type { Db } from '../storage/sqlite.ts';

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
  prompt: string;
  delivery: Delivery;
  /** The execution whose turn promoted the input. */
  executionId: string;
}

export type AssistantStatus = 'running' | 'completed' | 'failed' | 'recovered';
export interface TextPart { id: string; type: 'text'; text: string }
export type ToolStatus = 'pending' | 'running' | 'completed' | 'error';
export interface ToolData {
  callId: string;
  name: string;
  input: unknown;
  durable: boolean;
  idempotencyKey?: string;
  state: ToolStatus;
  output?: unknown;
  error?: RecordedError;
}
export interface AssistantData {
  executionId: string;
  step: number;
  status: AssistantStatus;
  parts: TextPart[];
  tools: ToolData[];
  /** step.ended */
  finish?: string;
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
}

export type MessageData =
  | { type: 'user'; data: UserData }
  | { type: 'assistant'; data: AssistantData }
  | { type: 'compaction'; data: CompactionData };

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

export function messageRows(db: Db) {
  const get = db.prepare('SELECT * FROM session_message WHERE session_id = ? AND id = ?');
  const insert = db.prepare(`INSERT INTO session_message (id, session_id, type, seq, time_created, time_updated, data)
                             VALUES (@id, @session_id, @type, @seq, @time_created, @time_updated, @data)`);
  const update = db.prepare('UPDATE session_message SET data = ?, time_updated = ? WHERE session_id = ? AND id = ?');
  const clear = db.prepare('DELETE FROM session_message');
  return {
    get: (sessionId: string, id: string) => get.get(sessionId, id) as MessageRow | undefined,
    insert: (row: Omit<MessageRow, 'data'> & { data: unknown }): void => void insert.run({ ...row, data: toJson(row.data) }),
    update: (sessionId: string, id: string, data: unknown, time: number): void => void update.run(toJson(data), time, sessionId, id),
    clearAll: (): void => void clear.run(),
  };
}
