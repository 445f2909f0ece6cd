/**
 * The inspector's follow of the log: one subscription folding every committed event into the store
 * (each session's state and summary), the timeline index and the conversation marks, kept in the
 * index store beside the log when there is one (a restart resumes at the position kept). It forgets
 * a session's older life when the session is written again, and a deleted session when told.
 * The HTTP server (server.ts) answers views from what it holds.
 */
import type { Clock, TimerHandle } from '../clock.ts';
import type { SessionEvent } from '../events/envelope.ts';
import type { EventLog } from '../events/event-log.ts';
import { HttpError, messageOf } from '../errors.ts';
import { ConversationMarks } from './conversation-marks.ts';
import { MemoryInspectorIndex, type Followed, type FollowedSession, type InspectorIndexStore } from './index-store.ts';
import { createInspectorStore, sessionsWrittenAgain, whenFolded, type InspectorContext, type InspectorStore } from './store.ts';
import { TimelineIndex } from './timeline-index.ts';

/** Calls `deleted` for each session deletion recorded (with the log position its events were at or below), until closed. */
export type DeletionFeed = (deleted: (sessionId: string, headPosition: number) => Promise<void>) => { close(): Promise<void> };

export interface FollowOptions {
  log: EventLog;
  /** Where the index is kept across starts; absent: in memory (the follow's own state is not kept). */
  index?: InspectorIndexStore;
  clock: Clock;
  /** Resolves when the follow may take its next batch (the server's gate: views come first). */
  turn: () => Promise<void>;
  /** The events of a batch committed after the follow started (what live pages are sent), and the context once folded. */
  onFresh?: (events: readonly SessionEvent[], sessions: InspectorContext['sessions']) => void;
  deletions?: DeletionFeed;
  /**
   * Sessions held in memory at most (with `index`): the others are let go once kept, and read back
   * from the index when their next events come (a worker keeping the index for a later inspector).
   * Absent: every session is held (the inspector's list shows them all).
   */
  holdSessions?: number;
  /** The subscription failed: the follow has stopped. */
  onError: (err: unknown) => void;
}

export interface LogFollow {
  store: InspectorStore;
  /** Where the index is kept (in memory without `index`). */
  kept: InspectorIndexStore;
  index: TimelineIndex;
  marks: ConversationMarks;
  /** The log's head when the follow started. */
  startHead: number;
  /** The position the follow resumed after, from the kept index (0: from the log's start). */
  resumedAfter: number;
  context(): InspectorContext;
  /** How far the follow is through the log held at start (null: past it, or stopped). */
  indexingNow(): { folded: number; of: number } | null;
  /** Resolves once the store has folded the log up to `position`; a 503 if the follow stops first. */
  untilFolded(position: number): Promise<void>;
  /** Stops following (and keeps what it folded, with an index). */
  close(): Promise<void>;
}

/** How often the follow's state (every session changed since) is written to a kept index; a restart reads the log from there. */
const KEEP_FOLLOW_MS = 1_000;

export async function followLog(options: FollowOptions): Promise<LogFollow> {
  const { log, clock } = options;
  const kept = options.index ?? new MemoryInspectorIndex();
  const startHead = await log.head();
  // a kept index resumes the follow where it stopped: the list and the tree at once, the log read from there on
  // (a follow that holds few sessions reads them back one by one as their events come)
  const hold = options.index ? options.holdSessions : undefined;
  let followed: Followed | undefined;
  if (options.index && hold === undefined) followed = kept.followed(log.name);
  else if (options.index) {
    const position = kept.followedPosition(log.name);
    followed = position === undefined ? undefined : { position, sessions: [] };
  }
  if (followed && followed.position > startHead) followed = undefined; // a log that is not the one followed (restored from an older copy)
  // a follow from the log's start replaces what the index kept of another (the sessions, the timeline blocks)
  if (options.index && !followed) kept.putFollowed(log.name, 0, [], true);
  const store = createInspectorStore(followed);
  const index = new TimelineIndex(kept);
  const marks = new ConversationMarks(undefined, kept);
  const context = () => store.getSnapshot().context;
  let failure: unknown;
  const failed = new Set<(err: unknown) => void>();

  // with `holdSessions`: the sessions in memory, least recently folded first
  const held = new Map<string, true>();
  /** Reads back the batch's sessions that were let go (as last kept), and counts each as recently folded. */
  const holdBatch = (events: readonly SessionEvent[]) => {
    const back: FollowedSession[] = [];
    for (const id of new Set(events.map((e) => e.sessionId))) {
      const head = context().snapshots[id] ? undefined : kept.headOf(id);
      if (head) back.push(head);
      held.delete(id);
      held.set(id, true);
    }
    if (back.length > 0) store.send({ type: 'loaded', sessions: back });
  };
  /** Lets go of the least recently folded sessions past `hold` (each was just kept). */
  const letGo = () => {
    if (hold === undefined || held.size <= hold) return;
    const ids: string[] = [];
    for (const id of held.keys()) {
      if (held.size - ids.length <= hold) break;
      ids.push(id);
    }
    for (const id of ids) {
      held.delete(id);
      index.forget(id);
      marks.forget(id);
    }
    store.send({ type: 'dropped', ids });
  };
  // the sessions folded since the follow's state was last kept
  const dirty = new Set<string>();
  let keptAt = clock.now();
  /** A keep due once the follow has been quiet a while (what the last batches folded is not left unkept). */
  let keepLater: TimerHandle | undefined;
  const keepFollow = () => {
    clock.clearTimeout(keepLater);
    keepLater = undefined;
    if (!options.index || dirty.size === 0) return;
    const ctx = context();
    const changed = [...dirty].flatMap((id) => {
      const snapshot = ctx.snapshots[id];
      return snapshot ? [{ snapshot, previous: ctx.previous[id] ?? null, summary: ctx.sessions[id]! }] : [];
    });
    kept.putFollowed(log.name, ctx.position, changed);
    dirty.clear();
    keptAt = clock.now();
    letGo();
  };
  /** The stretch of each session's log before this batch that the timeline index or the marks have not taken (a follow resumed past them): read first. */
  const fillGaps = async (events: readonly SessionEvent[]) => {
    const firsts = new Map<string, number>();
    for (const e of events) if (!firsts.has(e.sessionId)) firsts.set(e.sessionId, e.seq);
    for (const [sessionId, first] of firsts) {
      let from = Math.min(index.indexedSeq(sessionId), marks.coveredSeq(sessionId));
      while (from < first - 1) {
        const read = await log.readSession(sessionId, { afterSeq: from, limit: Math.min(first - 1 - from, 10_000) });
        if (read.length === 0) break;
        index.add(read);
        marks.add(read);
        from = read[read.length - 1]!.seq;
      }
    }
  };
  const forget = (sessionId: string) => {
    kept.forget(sessionId);
    index.forget(sessionId);
    marks.forget(sessionId);
  };
  /** Sessions deleted, with the log position their events were at or below: events of theirs up to it are of a life gone. */
  const deletedThrough = new Map<string, number>();
  const forgetDeleted = async (sessionId: string, headPosition: number) => {
    deletedThrough.set(sessionId, Math.max(deletedThrough.get(sessionId) ?? 0, headPosition));
    // unknown here (nor kept, for a follow that lets sessions go), or written again since (the follow shows its new life): nothing to forget
    const known = context().snapshots[sessionId] !== undefined || (hold !== undefined && kept.headOf(sessionId) !== undefined);
    if (!known || (await log.lastSeq(sessionId)) > 0) return;
    store.send({ type: 'dropped', ids: [sessionId] });
    forget(sessionId);
    dirty.delete(sessionId);
    held.delete(sessionId);
  };
  const subscription = log.subscribe({
    after: followed?.position ?? 0,
    onBatch: async (batch) => {
      // events of a deleted life read before their purge are left out (the position still moves past them)
      const events = deletedThrough.size === 0 ? batch : batch.filter((e) => (e.position ?? Number.POSITIVE_INFINITY) > (deletedThrough.get(e.sessionId) ?? 0));
      const through = batch[batch.length - 1]!.position;
      if (hold !== undefined) holdBatch(events);
      // a session deleted and written again: what was kept of its older life goes first
      for (const id of sessionsWrittenAgain(context(), events)) forget(id);
      // resumed past what the index or the marks took of a session (after a restart, or let go since)
      if (followed || hold !== undefined) await fillGaps(events);
      store.send({ type: 'committed', events, ...(through === undefined ? {} : { through }) });
      kept.putCheckpoints(context().checkpoints);
      index.add(events);
      marks.add(events);
      for (const e of events) dirty.add(e.sessionId);
      if (clock.now() - keptAt >= KEEP_FOLLOW_MS) keepFollow();
      else if (options.index && keepLater === undefined) keepLater = clock.setTimeout(keepFollow, KEEP_FOLLOW_MS);
      const fresh = (e: SessionEvent) => (e.position ?? Number.POSITIVE_INFINITY) > startHead;
      const last = events.at(-1);
      if (last && fresh(last)) options.onFresh?.(events.filter(fresh), context().sessions);
      return options.turn();
    },
    onError: (err) => {
      failure = err;
      for (const f of failed) f(err);
      options.onError(err);
    },
  });
  const deletionFollow = options.deletions?.(forgetDeleted);

  return {
    store,
    kept,
    index,
    marks,
    startHead,
    resumedAfter: followed?.position ?? 0,
    context,
    indexingNow() {
      if (failure !== undefined) return null;
      const folded = context().position;
      return folded < startHead ? { folded, of: startHead } : null;
    },
    async untilFolded(position) {
      if (failure !== undefined) throw new HttpError(503, 'log_unavailable', `The inspector stopped following ${log.name}: ${messageOf(failure)}. Restart it.`);
      let fail: ((err: unknown) => void) | undefined;
      try {
        await Promise.race([
          whenFolded(store, position),
          new Promise<never>((_, reject) =>
            failed.add((fail = (err) => reject(new HttpError(503, 'log_unavailable', `The inspector stopped following ${log.name}: ${messageOf(err)}.`)))),
          ),
        ]);
      } finally {
        if (fail) failed.delete(fail);
      }
    },
    async close() {
      await deletionFollow?.close();
      await subscription.close();
      keepFollow();
    },
  };
}
