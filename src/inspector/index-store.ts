/**
 * Where the inspector keeps the index its views start from, so that no view folds a long session
 * from seq 0: machine snapshots every CHECKPOINT_EVERY events (time travel, the chart) and the
 * conversation marks (the conversation, rows at a seq). Written as the inspector follows the log;
 * kept in memory (MemoryInspectorIndex) or beside the log in SQLite (sqlite-index.ts: read at once
 * after a restart, so a first view on a million-event session reads a few hundred events, not the
 * log). Everything read from it is checked against the log before use (the event at its seq).
 * One contract suite: src/testing/inspector-index-contract.ts.
 */
import type { SessionSnapshot } from '../machines/decider.ts';
import { MACHINE_VERSION } from '../machines/snapshot-store.ts';
import type { SessionSummary } from './store.ts';

/** What the index's entries were folded by: the machine, and the conversation fold behind the marks (bump `m1` when conversation.ts counts entries or rows differently). */
export const INDEX_VERSION = `${MACHINE_VERSION}/m1`;

/**
 * Rows the projector makes (src/projector/projector.ts): an input per `input.admitted`; a message per
 * `input.promoted` (the user's), per `step.started` of a new message id, per `compaction.started`
 * and per item of a `session.forked` transcript; a recovery per `recovery.completed` that admitted a
 * continuation. (Execution rows live only while their turn runs: a mark has none.)
 */
export interface RowCounts {
  inputs: number;
  messages: number;
  recoveries: number;
}

/** A sequence at which every conversation entry so far was final (conversation-marks.ts). */
export interface ConversationMark {
  /** The sequence, id and time of the event the mark is at. */
  seq: number;
  eventId: string;
  time: number;
  /** Entries the conversation had at `seq`, all final. */
  first: number;
  /** Rows the projector had made for the session by `seq` (none of them changes after it). */
  rows: RowCounts;
}

/** A session where the inspector's follow of the log left it: the list's row, the tree's links, time travel to the head. */
export interface FollowedSession {
  snapshot: SessionSnapshot;
  /** The snapshot before its last event (null: it has one event). */
  previous: SessionSnapshot | null;
  summary: SessionSummary;
}

/** Where the follow of a log stopped: the log position folded, and every session as it was then. */
export interface Followed {
  position: number;
  sessions: FollowedSession[];
}

/** Seqs per timeline block (timeline-index.ts): one block row per this many events of a session. */
export const TIMELINE_BLOCK = 4_096;

/** A full block of a session's timeline index: seqs `block * TIMELINE_BLOCK + 1` to `(block + 1) * TIMELINE_BLOCK`. */
export interface TimelineBlock {
  block: number;
  /** The id of its last event (a block of an older life of the session has another). */
  lastId: string;
  /** The time of every TIME_EVERY-th event, from its first. */
  times: number[];
  /** Event type -> its seqs in the block, ascending. */
  types: Record<string, number[]>;
}

/** What the timeline needs of a block without reading it: how many events of each type, and its first time. */
export interface TimelineBlockSummary {
  block: number;
  lastId: string;
  firstTime: number;
  counts: Record<string, number>;
}

export function summarizeBlock(b: TimelineBlock): TimelineBlockSummary {
  return {
    block: b.block,
    lastId: b.lastId,
    firstTime: b.times[0] ?? 0,
    counts: Object.fromEntries(Object.entries(b.types).map(([t, seqs]) => [t, seqs.length])),
  };
}

export interface InspectorIndexStore {
  /** Where the follow of `log` (its name) stopped, undefined when it never did under this index version (start from the log's start). */
  followed(log: string): Followed | undefined;
  /** Only the position of `followed` (its sessions are read back one by one, `headOf`). */
  followedPosition(log: string): number | undefined;
  /** Keeps where the follow of `log` is: `position`, and the sessions that changed since the last call (`reset`: a follow from the start: the other sessions and every timeline block are dropped). */
  putFollowed(log: string, position: number, sessions: readonly FollowedSession[], reset?: boolean): void;
  /** One session as the follow last kept it (undefined: not kept): a follow that holds few sessions in memory reads them back. */
  headOf(sessionId: string): FollowedSession | undefined;
  /** The session's full timeline blocks from the first, ascending and contiguous (summaries only). */
  timelineOf(sessionId: string): TimelineBlockSummary[];
  /** One full block (undefined: not kept). */
  timelineBlock(sessionId: string, block: number): TimelineBlock | undefined;
  /** Keeps full blocks (replacing one at the same number). */
  putTimelineBlocks(sessionId: string, blocks: readonly TimelineBlock[]): void;
  /** The latest checkpoint of the session at or before `seq` (undefined: none). */
  checkpointAt(sessionId: string, seq: number): SessionSnapshot | undefined;
  /** Keeps checkpoints (replacing one at the same session and seq). */
  putCheckpoints(snapshots: readonly SessionSnapshot[]): void;
  /** The session's marks, ascending by seq. */
  marksOf(sessionId: string): ConversationMark[];
  /** Keeps marks made after those it has (ascending). */
  putMarks(sessionId: string, marks: readonly ConversationMark[]): void;
  /** Forgets the session's checkpoints, marks, timeline and followed state (they are of an older life of it: it was deleted and written again). */
  forget(sessionId: string): void;
}

/** Index of the last element with seq <= `seq` in a list ascending by seq, -1 when none. */
export function lastAtOrBefore(list: readonly { seq: number }[], seq: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]!.seq <= seq) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** The index in memory: built again by every start from the whole log (memory grows with the log: one snapshot per CHECKPOINT_EVERY events). */
export class MemoryInspectorIndex implements InspectorIndexStore {
  private readonly checkpoints = new Map<string, { seq: number; snapshot: SessionSnapshot }[]>();
  private readonly marks = new Map<string, ConversationMark[]>();
  private readonly timeline = new Map<string, TimelineBlock[]>();
  private follow: { log: string; position: number; sessions: Map<string, FollowedSession> } | undefined;

  followed(log: string): Followed | undefined {
    if (this.follow?.log !== log) return undefined;
    return { position: this.follow.position, sessions: [...this.follow.sessions.values()] };
  }

  followedPosition(log: string): number | undefined {
    return this.follow?.log === log ? this.follow.position : undefined;
  }

  putFollowed(log: string, position: number, sessions: readonly FollowedSession[], reset = false): void {
    if (reset) this.timeline.clear();
    if (reset || this.follow?.log !== log) this.follow = { log, position, sessions: new Map() };
    this.follow.position = position;
    for (const s of sessions) this.follow.sessions.set(s.snapshot.context.sessionId, s);
  }

  headOf(sessionId: string): FollowedSession | undefined {
    return this.follow?.sessions.get(sessionId);
  }

  timelineOf(sessionId: string): TimelineBlockSummary[] {
    const list = this.timeline.get(sessionId) ?? [];
    const out: TimelineBlockSummary[] = [];
    for (const b of list) {
      if (b.block !== out.length) break;
      out.push(summarizeBlock(b));
    }
    return out;
  }

  timelineBlock(sessionId: string, block: number): TimelineBlock | undefined {
    return this.timeline.get(sessionId)?.find((b) => b.block === block);
  }

  putTimelineBlocks(sessionId: string, blocks: readonly TimelineBlock[]): void {
    let list = this.timeline.get(sessionId);
    if (!list) this.timeline.set(sessionId, (list = []));
    for (const b of blocks) {
      const at = list.findIndex((x) => x.block >= b.block);
      if (at < 0) list.push(b);
      else if (list[at]!.block === b.block) list[at] = b;
      else list.splice(at, 0, b);
    }
  }

  checkpointAt(sessionId: string, seq: number): SessionSnapshot | undefined {
    const list = this.checkpoints.get(sessionId) ?? [];
    return list[lastAtOrBefore(list, seq)]?.snapshot;
  }

  putCheckpoints(snapshots: readonly SessionSnapshot[]): void {
    for (const snapshot of snapshots) {
      const sessionId = snapshot.context.sessionId;
      const seq = snapshot.context.seq;
      let list = this.checkpoints.get(sessionId);
      if (!list) this.checkpoints.set(sessionId, (list = []));
      const at = lastAtOrBefore(list, seq);
      if (at >= 0 && list[at]!.seq === seq) list[at] = { seq, snapshot };
      else list.splice(at + 1, 0, { seq, snapshot });
    }
  }

  marksOf(sessionId: string): ConversationMark[] {
    return [...(this.marks.get(sessionId) ?? [])];
  }

  putMarks(sessionId: string, marks: readonly ConversationMark[]): void {
    let list = this.marks.get(sessionId);
    if (!list) this.marks.set(sessionId, (list = []));
    for (const m of marks) if (m.seq > (list.at(-1)?.seq ?? 0)) list.push(m);
  }

  forget(sessionId: string): void {
    this.checkpoints.delete(sessionId);
    this.marks.delete(sessionId);
    this.timeline.delete(sessionId);
    this.follow?.sessions.delete(sessionId);
  }
}
