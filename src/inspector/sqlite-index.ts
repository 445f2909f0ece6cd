/**
 * The inspector's index (index-store.ts) in the `inspector_checkpoint` and `inspector_mark` tables
 * (migration 19) and `inspector_follow`, `inspector_head` and `inspector_timeline` (migration 21) of
 * the database beside the log (or of a file of its own: `sessiond inspect --index FILE`): a restarted inspector reads its checkpoints and
 * marks at once instead of folding the whole log again. Rows of another INDEX_VERSION are ignored
 * (and replaced as the inspector follows the log again). On a read-only database (`sessiond
 * inspect --db`) it reads what a worker's inspector wrote and keeps what it makes in memory; a write
 * that fails (the file busy or full) is kept in memory too and told to `onWriteError`: the index is
 * a cache, never a reason for the inspector to stop following the log.
 */
import type { Db } from '../storage/sqlite/database.ts';
import type { SessionSnapshot } from '../machines/decider.ts';
import {
  INDEX_VERSION,
  MemoryInspectorIndex,
  summarizeBlock,
  type ConversationMark,
  type Followed,
  type FollowedSession,
  type InspectorIndexStore,
  type TimelineBlock,
  type TimelineBlockSummary,
} from './index-store.ts';

/** The index over `db`, or undefined when its schema has no index tables (a read-only database of an older sessiond). */
export function sqliteInspectorIndex(db: Db): SqliteInspectorIndex | undefined {
  const has = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'inspector_timeline'").get() !== undefined;
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
      follow: db.prepare('SELECT position FROM inspector_follow WHERE log = ? AND version = ?').pluck(),
      heads: db.prepare('SELECT data FROM inspector_head').pluck(),
      head: db.prepare('SELECT data FROM inspector_head WHERE session_id = ?').pluck(),
      putFollow: db.prepare('INSERT OR REPLACE INTO inspector_follow (log, version, position) VALUES (?, ?, ?)'),
      putHead: db.prepare('INSERT OR REPLACE INTO inspector_head (session_id, data) VALUES (?, ?)'),
      dropFollows: db.prepare('DELETE FROM inspector_follow'),
      dropHeads: db.prepare('DELETE FROM inspector_head'),
      dropHead: db.prepare('DELETE FROM inspector_head WHERE session_id = ?'),
      blocks: db.prepare('SELECT summary FROM inspector_timeline WHERE session_id = ? AND version = ? ORDER BY block').pluck(),
      block: db.prepare('SELECT data FROM inspector_timeline WHERE session_id = ? AND version = ? AND block = ?').pluck(),
      putBlock: db.prepare('INSERT OR REPLACE INTO inspector_timeline (session_id, block, version, summary, data) VALUES (?, ?, ?, ?, ?)'),
      dropBlocks: db.prepare('DELETE FROM inspector_timeline WHERE session_id = ?'),
      dropTimeline: db.prepare('DELETE FROM inspector_timeline'),
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

  followed(log: string): Followed | undefined {
    const position = this.stmts.follow.get(log, this.version) as number | undefined;
    if (position === undefined) return this.memory.followed(log);
    return { position, sessions: (this.stmts.heads.all() as string[]).map((d) => JSON.parse(d) as FollowedSession) };
  }

  followedPosition(log: string): number | undefined {
    return (this.stmts.follow.get(log, this.version) as number | undefined) ?? this.memory.followedPosition(log);
  }

  putFollowed(log: string, position: number, sessions: readonly FollowedSession[], reset = false): void {
    this.write(
      () => {
        if (reset) {
          this.stmts.dropFollows.run();
          this.stmts.dropHeads.run();
          this.stmts.dropTimeline.run();
        }
        for (const s of sessions) this.stmts.putHead.run(s.snapshot.context.sessionId, JSON.stringify(s));
        this.stmts.putFollow.run(log, this.version, position);
      },
      () => this.memory.putFollowed(log, position, sessions, reset),
    );
  }

  headOf(sessionId: string): FollowedSession | undefined {
    const data = this.stmts.head.get(sessionId) as string | undefined;
    return data === undefined ? this.memory.headOf(sessionId) : (JSON.parse(data) as FollowedSession);
  }

  timelineOf(sessionId: string): TimelineBlockSummary[] {
    const stored = (this.stmts.blocks.all(sessionId, this.version) as string[]).map((d) => JSON.parse(d) as TimelineBlockSummary);
    const out: TimelineBlockSummary[] = [];
    for (const b of stored) {
      if (b.block !== out.length) break;
      out.push(b);
    }
    for (const b of this.memory.timelineOf(sessionId)) if (b.block === out.length) out.push(b);
    return out;
  }

  timelineBlock(sessionId: string, block: number): TimelineBlock | undefined {
    const data = this.stmts.block.get(sessionId, this.version, block) as string | undefined;
    return data === undefined ? this.memory.timelineBlock(sessionId, block) : (JSON.parse(data) as TimelineBlock);
  }

  putTimelineBlocks(sessionId: string, blocks: readonly TimelineBlock[]): void {
    if (blocks.length === 0) return;
    this.write(
      () => {
        for (const b of blocks) this.stmts.putBlock.run(sessionId, b.block, this.version, JSON.stringify(summarizeBlock(b)), JSON.stringify(b));
      },
      () => this.memory.putTimelineBlocks(sessionId, blocks),
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
        this.stmts.dropBlocks.run(sessionId);
        this.stmts.dropHead.run(sessionId);
      },
      () => undefined,
    );
  }
}
