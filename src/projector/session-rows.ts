/**
 * The session and session_tag rows (what `list` pages through and a tag filter looks up), written
 * behind once per batch like the messages. What each column follows:
 * docs/architecture.md#design-notes-the-projector.
 */
import type { EventType } from '../events/catalog.ts';
import type { SessionEvent } from '../events/envelope.ts';
import type { SessionStateValue } from '../machines/decider.ts';
import { applyTagChanges, type TagChanges, type Tags } from '../events/tags.ts';
import type { Db } from '../storage/sqlite/database.ts';

export interface SessionRow {
  session_id: string;
  state: SessionStateValue;
  /** 1 while one of the session's waits is open. */
  waiting: number;
  pending_inputs: number;
  last_seq: number;
  time_created: number;
  time_updated: number;
  /** JSON object of the tags, keys sorted. */
  tags: string;
  forked_from: string | null;
  forked_seq: number | null;
  /** The session's owner (its first event's), NULL when none. */
  owned_by: string | null;
  /** The session whose turn last called it (its latest admission's `caller`), NULL when none has. */
  called_by: string | null;
}

/** The state an event moves its session to (the machine's targets); absent: the state stays. */
const MOVES: Partial<Record<EventType, SessionStateValue>> = {
  'execution.claimed': 'claimed',
  'execution.started': 'running',
  'execution.settled': 'settled',
  'execution.cancelled': 'settled',
  'recovery.started': 'recovering',
  'recovery.completed': 'idle',
};

/** Events that change what `waiting` and `pending_inputs` count (the rest leave both as they are). */
const COUNTED: ReadonlySet<EventType> = new Set(['input.admitted', 'input.promoted', 'input.dropped', 'wait.started', 'wait.resolved']);

interface Touched {
  state: SessionStateValue | null;
  /** An event of the batch changed its inputs or waits: count them again at the flush. */
  recount: boolean;
  seq: number;
  /** The time of the batch's first event of the session (its creation, when it is new), and of its latest. */
  first: number;
  time: number;
  tags: TagChanges[];
  /** A `session.forked` in the batch: its source and sequence. */
  forked: { sessionId: string; seq: number } | null;
  /** The owner its first event gave it. */
  owner: string | null;
  /** The caller of the batch's latest admission that had one. */
  caller: string | null;
}

export function sessionListRows(db: Db) {
  const upsert = db.prepare(`
    INSERT INTO session (session_id, state, waiting, pending_inputs, last_seq, time_created, time_updated, tags)
    VALUES (@id, coalesce(@state, 'idle'),
            EXISTS (SELECT 1 FROM session_wait WHERE session_id = @id AND outcome IS NULL),
            (SELECT COUNT(*) FROM session_input WHERE session_id = @id AND promoted_seq IS NULL AND dropped_seq IS NULL),
            @seq, @first, @time, '{}')
    ON CONFLICT (session_id) DO UPDATE SET
      state = coalesce(@state, state), waiting = excluded.waiting, pending_inputs = excluded.pending_inputs,
      last_seq = max(last_seq, @seq), time_updated = max(time_updated, @time)
    RETURNING tags, time_created`);
  // a batch that changed neither inputs nor waits (a turn's steps, text, renewals) leaves the counts alone
  const upsertUncounted = db.prepare(`
    INSERT INTO session (session_id, state, last_seq, time_created, time_updated, tags)
    VALUES (@id, coalesce(@state, 'idle'), @seq, @first, @time, '{}')
    ON CONFLICT (session_id) DO UPDATE SET
      state = coalesce(@state, state), last_seq = max(last_seq, @seq), time_updated = max(time_updated, @time)
    RETURNING tags, time_created`);
  // a session that has its row and no tag change: a plain UPDATE (no RETURNING, no insert attempt)
  // costs about 60 % of the upsert that returns the tags
  const COUNTS = `waiting = EXISTS (SELECT 1 FROM session_wait WHERE session_id = @id AND outcome IS NULL),
                  pending_inputs = (SELECT COUNT(*) FROM session_input WHERE session_id = @id AND promoted_seq IS NULL AND dropped_seq IS NULL),`;
  const MOVED = 'state = coalesce(@state, state), last_seq = max(last_seq, @seq), time_updated = max(time_updated, @time)';
  const update = db.prepare(`UPDATE session SET ${COUNTS} ${MOVED} WHERE session_id = @id`);
  const updateUncounted = db.prepare(`UPDATE session SET ${MOVED} WHERE session_id = @id`);
  const setTags = db.prepare('UPDATE session SET tags = ? WHERE session_id = ?');
  const setForked = db.prepare('UPDATE session SET forked_from = ?, forked_seq = ? WHERE session_id = ?');
  const setOwner = db.prepare('UPDATE session SET owned_by = ? WHERE session_id = ?');
  const setCaller = db.prepare('UPDATE session SET called_by = ? WHERE session_id = ?');
  const putTag = db.prepare(`INSERT INTO session_tag (session_id, key, value, time_created) VALUES (?, ?, ?, ?)
                             ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value`);
  const removeTag = db.prepare('DELETE FROM session_tag WHERE session_id = ? AND key = ?');
  const clearSessions = db.prepare('DELETE FROM session');
  const clearTags = db.prepare('DELETE FROM session_tag');
  const touched = new Map<string, Touched>();

  const note = (e: SessionEvent): Touched => {
    let t = touched.get(e.sessionId);
    if (!t)
      touched.set(
        e.sessionId,
        (t = { state: null, recount: false, seq: e.seq, first: e.time, time: e.time, tags: [], forked: null, owner: null, caller: null }),
      );
    t.seq = Math.max(t.seq, e.seq);
    t.time = Math.max(t.time, e.time);
    return t;
  };

  return {
    /** Notes a folded event: the session's sequence, time and state move. */
    touch(e: SessionEvent): void {
      const t = note(e);
      const move = MOVES[e.type];
      if (move) t.state = move;
      if (COUNTED.has(e.type)) t.recount = true;
    },
    /** Notes a change of the session's tags (an admission's, a `session.tagged`'s), applied in order at the flush. */
    tag(e: SessionEvent, changes: TagChanges): void {
      note(e).tags.push(changes);
    },
    /** Notes that the session is a fork (its `session.forked`). */
    fork(e: SessionEvent, from: { sessionId: string; seq: number }): void {
      note(e).forked = from;
    },
    /** Notes the session's owner (its first event's `owner`). */
    own(e: SessionEvent, owner: string): void {
      note(e).owner = owner;
    },
    /** Notes the session that called it (an admission's `caller`): the latest wins. */
    calledBy(e: SessionEvent, caller: string): void {
      note(e).caller = caller;
    },
    /** Writes every touched session (and its tags), once. */
    flush(): void {
      for (const [id, t] of touched) {
        const values = { id, state: t.state, seq: t.seq, first: t.first, time: t.time };
        const updated = t.tags.length === 0 && (t.recount ? update : updateUncounted).run(values).changes > 0;
        const row = updated ? undefined : ((t.recount ? upsert : upsertUncounted).get(values) as { tags: string; time_created: number });
        if (t.forked) setForked.run(t.forked.sessionId, t.forked.seq, id);
        if (t.owner !== null) setOwner.run(t.owner, id);
        if (t.caller !== null) setCaller.run(t.caller, id);
        if (row === undefined || t.tags.length === 0) continue;
        const before = JSON.parse(row.tags) as Tags;
        const after = t.tags.reduce(applyTagChanges, before);
        if (after === before) continue;
        for (const key of Object.keys(before)) if (!(key in after)) removeTag.run(id, key);
        for (const [key, value] of Object.entries(after)) if (before[key] !== value) putTag.run(id, key, value, row.time_created);
        setTags.run(JSON.stringify(after), id);
      }
      touched.clear();
    },
    /** Forgets what the batch noted (after a flush, or a batch rolled back). */
    discard: (): void => touched.clear(),
    clearAll(): void {
      clearSessions.run();
      clearTags.run();
    },
  };
}
