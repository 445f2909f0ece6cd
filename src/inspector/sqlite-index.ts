/**
 * The inspector's index (index-store.ts) in the `inspector_checkpoint` and `inspector_mark` tables
 * (migration 18) of the database beside the log: a restarted inspector reads its checkpoints and
 * marks at once instead of folding the whole log again. Rows of another INDEX_VERSION are ignored
 * (and replaced as the inspector follows the log again). On a read-only database (`sessiond
 * inspect --db`) it reads what a worker's inspector wrote and keeps what it makes in memory; a write
 * that fails (the file busy or full) is kept in memory too and told to `onWriteError`: the index is
 * a cache, never a reason for the inspector to stop following the log.
 */
import type { Db } from '../storage/sqlite/database.ts';
import type { SessionSnapshot } from '../machines/decider.ts';
import { INDEX_VERSION, MemoryInspectorIndex, type ConversationMark, type InspectorIndexStore } from './index-store.ts';

/** The index over `db`, or undefined when its schema has no index tables (a read-only database of an older sessiond). */
export function sqliteInspectorIndex(db: Db): SqliteInspectorIndex | undefined {
  const has = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'inspector_mark'").get() !== undefined;
  return has ? new SqliteInspectorIndex(db) : undefined;
}

export class SqliteInspectorIndex implements InspectorIndexStore {
  private readonly stmts;
  /** What a read-only database cannot take, or a write that failed. */
  private readonly memory = new MemoryInspectorIndex();
  private readonly readonly: boolean;

  constructor(
    private readonly db: Db,
    private readonly version = INDEX_VERSION,
    private readonly onWriteError: (err: unknown) => void = () => undefined,
  ) {
    this.readonly = db.readonly;
    this.stmts = {
      checkpointAt: db.prepare('SELECT data FROM inspector_checkpoint WHERE session_id = ? AND version = ? AND seq <= ? ORDER BY seq DESC LIMIT 1').pluck(),
      putCheckpoint: db.prepare('INSERT OR REPLACE INTO inspector_checkpoint (session_id, seq, version, data) VALUES (?, ?, ?, ?)'),
      marks: db.prepare('SELECT data FROM inspector_mark WHERE session_id = ? AND version = ? ORDER BY seq').pluck(),
      putMark: db.prepare('INSERT OR REPLACE INTO inspector_mark (session_id, seq, version, data) VALUES (?, ?, ?, ?)'),
      dropCheckpoints: db.prepare('DELETE FROM inspector_checkpoint WHERE session_id = ?'),
      dropMarks: db.prepare('DELETE FROM inspector_mark WHERE session_id = ?'),
    };
  }

  checkpointAt(sessionId: string, seq: number): SessionSnapshot | undefined {
    const data = this.stmts.checkpointAt.get(sessionId, this.version, seq) as string | undefined;
    const stored = data === undefined ? undefined : (JSON.parse(data) as SessionSnapshot);
    const made = this.memory.checkpointAt(sessionId, seq);
    return made && made.context.seq > (stored?.context.seq ?? -1) ? made : stored;
  }

  putCheckpoints(snapshots: readonly SessionSnapshot[]): void {
    if (snapshots.length === 0) return;
    this.write(
      () => {
        for (const s of snapshots) this.stmts.putCheckpoint.run(s.context.sessionId, s.context.seq, this.version, JSON.stringify(s));
      },
      () => this.memory.putCheckpoints(snapshots),
    );
  }

  marksOf(sessionId: string): ConversationMark[] {
    const stored = (this.stmts.marks.all(sessionId, this.version) as string[]).map((d) => JSON.parse(d) as ConversationMark);
    const last = stored.at(-1)?.seq ?? 0;
    return [...stored, ...this.memory.marksOf(sessionId).filter((m) => m.seq > last)];
  }

  putMarks(sessionId: string, marks: readonly ConversationMark[]): void {
    if (marks.length === 0) return;
    this.write(
      () => {
        for (const m of marks) this.stmts.putMark.run(sessionId, m.seq, this.version, JSON.stringify(m));
      },
      () => this.memory.putMarks(sessionId, marks),
    );
  }

  /** Writes in one transaction; on a read-only database, or when the write fails, `instead` keeps it in memory. */
  private write(rows: () => void, instead: () => void): void {
    if (this.readonly) {
      instead();
      return;
    }
    try {
      this.db.transaction(rows)();
    } catch (err) {
      instead();
      this.onWriteError(err);
    }
  }

  forget(sessionId: string): void {
    this.memory.forget(sessionId);
    this.write(
      () => {
        this.stmts.dropCheckpoints.run(sessionId);
        this.stmts.dropMarks.run(sessionId);
      },
      () => undefined,
    );
  }
}
