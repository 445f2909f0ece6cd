/**
 * Rebuild: throw the projection away and refold the whole log, a page per transaction (readers see
 * it behind, never empty), and a hash to compare projections. Why: docs/architecture.md#design-notes-the-projector.
 *
 *   await rebuildProjection(db, log, { onProgress: (done, total) => bar.update(done, { total }) });
 *   projectionHash(db) === projectionHash(otherDb)
 */
import { createHash } from 'node:crypto';
import { ErrorCode, SessiondError } from '../errors.ts';
import { DEFAULT_PAGE_SIZE, type EventLog } from '../events/event-log.ts';
import type { Db } from '../storage/sqlite/database.ts';
import { checkpointRows } from './checkpoint.ts';
import { executionRows } from './execution-rows.ts';
import { inputRows } from './input-rows.ts';
import { messageRows } from './message-rows.ts';
import { recoveryRows } from './recovery-rows.ts';
import { waitRows } from './wait-rows.ts';
import { sessionListRows } from './session-rows.ts';
import { blobRows } from './blob-rows.ts';
import { Projector, type ApplyResult } from './projector.ts';

export const DEFAULT_REBUILD_PAGE_SIZE = DEFAULT_PAGE_SIZE;

export interface RebuildOptions {
  /** Projector (checkpoint) name, default 'main'. */
  name?: string;
  /** Events read from the log per transaction (default 1000). */
  pageSize?: number;
  /** After each page: log positions folded so far, and the log's head (grows if the log does). */
  onProgress?: (done: number, total: number) => void;
}

export interface RebuildResult {
  /** Events folded. */
  events: number;
  /** The checkpoint reached. */
  position: number;
  /** Transactions committed (one per page; at least one, the reset). */
  pages: number;
}

/** Deletes every row of the projection tables and every checkpoint, in one transaction. */
export function resetProjection(db: Db): void {
  resetStatements(db).immediate();
}

function resetStatements(db: Db) {
  const all = [checkpointRows(db), executionRows(db), inputRows(db), messageRows(db), recoveryRows(db), waitRows(db), sessionListRows(db), blobRows(db)];
  return db.transaction(() => {
    for (const t of all) t.clearAll();
  });
}

export async function rebuildProjection(db: Db, log: EventLog, options: RebuildOptions = {}): Promise<RebuildResult> {
  const pageSize = options.pageSize ?? DEFAULT_REBUILD_PAGE_SIZE;
  if (!Number.isInteger(pageSize) || pageSize < 1) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Invalid rebuild option pageSize=${String(pageSize)}: use a whole number of events >= 1 (default ${DEFAULT_REBUILD_PAGE_SIZE}).`,
    );
  }
  const projector = new Projector(db, options.name === undefined ? {} : { name: options.name });
  const reset = resetStatements(db);
  const resetAndApply = db.transaction((page: Parameters<Projector['apply']>[0]): ApplyResult => {
    reset(); // nested: runs inside this transaction
    return projector.apply(page);
  });
  let total = await log.head();
  let result: ApplyResult | undefined;
  let events = 0;
  let pages = 0;
  for await (const page of log.readPages({ after: 0, pageSize })) {
    result = result === undefined ? resetAndApply.immediate(page) : projector.apply(page, { expectAtLeast: result.position });
    events += result.applied;
    pages++;
    const after = page[page.length - 1]!.position!;
    total = Math.max(total, after);
    options.onProgress?.(after, total);
  }
  if (result === undefined) {
    // an empty log: the reset alone
    result = resetAndApply.immediate([]);
    pages = 1;
    options.onProgress?.(0, total);
  }
  return { events, position: result.position, pages };
}

/** The projection tables, their columns in a fixed order, and a deterministic row order. */
const TABLES = [
  {
    table: 'session_execution',
    columns: 'id, session_id, owner_id, assistant_message_id, phase, assistant_seq, time_created, expires_at, recovery_error',
    order: 'id',
  },
  { table: 'session_input', columns: 'id, session_id, prompt, parts, delivery, admitted_seq, promoted_seq, wake_pending, time_created', order: 'id' },
  { table: 'session_message', columns: 'id, session_id, type, seq, time_created, time_updated, data', order: 'id' },
  {
    table: 'session_recovery',
    columns: 'session_id, execution_id, assistant_message_id, continuation_message_id, phase, wake_pending, wake_attempts, recovery_error, time_created',
    order: 'execution_id',
  },
  {
    table: 'session_wait',
    columns: 'session_id, execution_id, kind, name, message_id, call_id, tool, until, outcome, time_created, time_resolved',
    order: 'session_id, execution_id, kind, name',
  },
  {
    table: 'session',
    columns: 'session_id, state, waiting, pending_inputs, last_seq, time_created, time_updated, tags, forked_from, forked_seq, owned_by, called_by',
    order: 'session_id',
  },
  { table: 'session_tag', columns: 'session_id, key, value, time_created', order: 'session_id, key' },
  { table: 'session_blob', columns: 'session_id, sha256, seq', order: 'session_id, sha256' },
] as const;

export type ProjectionTable = (typeof TABLES)[number]['table'];

/** Every row of the projection tables, each table ordered by its key (for comparisons and debugging). */
export function projectionRows(db: Db): Record<ProjectionTable, Record<string, unknown>[]> {
  const out = {} as Record<ProjectionTable, Record<string, unknown>[]>;
  for (const t of TABLES) out[t.table] = db.prepare(`SELECT ${t.columns} FROM ${t.table} ORDER BY ${t.order}`).all() as Record<string, unknown>[];
  return out;
}

/** sha256 (hex) over every row of the projection tables, in a fixed table, column and row order. The checkpoint is not included. */
export function projectionHash(db: Db): string {
  const hash = createHash('sha256');
  for (const t of TABLES) {
    hash.update(`${t.table}(${t.columns})\n`);
    for (const row of db.prepare(`SELECT ${t.columns} FROM ${t.table} ORDER BY ${t.order}`).raw().iterate()) {
      hash.update(`${JSON.stringify(row)}\n`);
    }
  }
  return hash.digest('hex');
}
