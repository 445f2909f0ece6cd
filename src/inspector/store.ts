/**
 * The inspector's state, an @xstate/store fed by the log's subscription: each session's snapshot
 * folded by the machine's own `evolve`, a summary for the list, and the snapshots at multiples of
 * `CHECKPOINT_EVERY` the last batch reached, for the index (index-store.ts) that time travel
 * (travel.ts) starts from. `committed` is pure; memory holds one snapshot per session.
 */
import { childrenOf, sessionView } from '../machines/session-view.ts';
import { createStore } from '@xstate/store';
import type { ExecutionPhase } from '../events/catalog.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { evolve, initialSnapshot, type SessionSnapshot, type SessionStateValue } from '../machines/decider.ts';

export interface SessionSummary {
  sessionId: string;
  state: SessionStateValue;
  /** Sequence of the last event folded. */
  seq: number;
  /** Time and type of the last event folded. */
  time: number;
  lastType: string;
  executionId: string | null;
  owner: string | null;
  leaseExpiresAt: number | null;
  phase: ExecutionPhase | null;
  /** Inputs admitted and not yet promoted. */
  pending: number;
  /** Open waits of the session's turn (approvals, signals, timers): the turn holds nothing until they end. */
  waiting: number;
  executions: number;
  /** The session whose turn last called it (`ctx.callSession`), null when none has. */
  calledBy: string | null;
}

/** Where a session sits among the sessions that call each other (`ctx.callSession`). */
export interface SessionTree {
  /** The session whose turn last called it, and that session's state (null when unknown to the log). */
  calledBy: { sessionId: string; state: SessionStateValue | null } | null;
  /** The sessions it called (their latest caller is this one), by id; `waitedOn`: its turn waits on it now. */
  children: { sessionId: string; state: SessionStateValue; waitedOn: boolean }[];
}

/** A session's parent and children, from every session the store has folded. */
export function sessionTree(ctx: InspectorContext, sessionId: string): SessionTree {
  const self = ctx.snapshots[sessionId];
  const parent = self?.context.calledBy;
  const waited = new Set(self ? childrenOf(self.context) : []);
  const children = Object.values(ctx.snapshots)
    .filter((s) => s.context.calledBy === sessionId)
    .map((s) => ctx.sessions[s.context.sessionId]!)
    .sort((a, b) => a.sessionId.localeCompare(b.sessionId))
    .map((s) => ({ sessionId: s.sessionId, state: s.state, waitedOn: waited.has(s.sessionId) }));
  return {
    calledBy: parent ? { sessionId: parent, state: ctx.sessions[parent]?.state ?? null } : null,
    children,
  };
}

/** A session's snapshot is kept as a checkpoint at every multiple of this sequence. */
export const CHECKPOINT_EVERY = 1_000;

export interface InspectorContext {
  /** Log position folded so far. */
  position: number;
  snapshots: Record<string, SessionSnapshot>;
  /** Each session's snapshot before its last event (time travel to the head folds one event from it). */
  previous: Record<string, SessionSnapshot>;
  sessions: Record<string, SessionSummary>;
  /** The snapshots at a multiple of CHECKPOINT_EVERY that the last batch folded (the server hands them to the index). */
  checkpoints: readonly SessionSnapshot[];
}

/** The summary the session list shows, from a folded snapshot and the last event folded into it. */
export function summarize(snapshot: SessionSnapshot, last?: Pick<SessionEvent, 'time' | 'type'>): SessionSummary {
  const v = sessionView(snapshot, last?.time ?? 0);
  return {
    sessionId: v.sessionId,
    state: v.state,
    seq: v.seq,
    time: last?.time ?? 0,
    lastType: last?.type ?? '',
    executionId: v.executionId,
    owner: v.owner,
    leaseExpiresAt: v.leaseExpiresAt,
    phase: v.phase,
    pending: v.pendingCount,
    waiting: v.waits.filter((w) => w.outcome === null).length,
    executions: v.executions,
    calledBy: v.calledBy,
  };
}

/**
 * Whether `e`, past the log position folded so far, starts a new life of a session folded before
 * (its seq 1 again: the session was deleted and written again).
 */
function startsAgain(snapshots: InspectorContext['snapshots'], position: number, e: SessionEvent): boolean {
  return e.seq === 1 && (e.position ?? 0) > position && (snapshots[e.sessionId]?.context.seq ?? 0) > 0;
}

/** The sessions of a batch that were deleted and written again: what is kept of their older life is to be forgotten. */
export function sessionsWrittenAgain(ctx: InspectorContext, events: readonly SessionEvent[]): string[] {
  const again = new Set<string>();
  let position = ctx.position;
  for (const e of events) {
    if (startsAgain(ctx.snapshots, position, e)) again.add(e.sessionId);
    position = Math.max(position, e.position ?? position);
  }
  return [...again];
}

/** Folds a batch into the context. Redelivered events (seq already folded) are ignored; a new life of a session replaces the old. `through`: the log position the batch reached (its events may have been left out). */
export function foldBatch(ctx: InspectorContext, events: readonly SessionEvent[], through?: number): InspectorContext {
  if (events.length === 0) return through !== undefined && through > ctx.position ? { ...ctx, position: through, checkpoints: [] } : ctx;
  const snapshots = { ...ctx.snapshots };
  const previous = { ...ctx.previous };
  const sessions = { ...ctx.sessions };
  const checkpoints: SessionSnapshot[] = [];
  let position = ctx.position;
  for (const e of events) {
    const again = startsAgain(snapshots, position, e);
    const before = again ? initialSnapshot(e.sessionId) : (snapshots[e.sessionId] ?? initialSnapshot(e.sessionId));
    position = Math.max(position, e.position ?? position);
    if (e.seq <= before.context.seq) continue;
    const after = evolve(before, e);
    previous[e.sessionId] = before;
    snapshots[e.sessionId] = after;
    sessions[e.sessionId] = summarize(after, e);
    if (e.seq % CHECKPOINT_EVERY === 0) checkpoints.push(after);
  }
  return { position: Math.max(position, through ?? position), snapshots, previous, sessions, checkpoints };
}

/** The context without the sessions (deleted from the log, or let go from memory by a follow that keeps them in its index). */
export function withoutSessions(ctx: InspectorContext, ids: readonly string[]): InspectorContext {
  const snapshots = { ...ctx.snapshots };
  const previous = { ...ctx.previous };
  const sessions = { ...ctx.sessions };
  for (const id of ids) {
    delete snapshots[id];
    delete previous[id];
    delete sessions[id];
  }
  return { ...ctx, snapshots, previous, sessions, checkpoints: [] };
}

/** The context with sessions read back from the index (as the follow kept them), to fold their next events. */
export function withSessions(ctx: InspectorContext, kept: FollowedState['sessions']): InspectorContext {
  const back = resumedContext({ position: ctx.position, sessions: kept });
  return {
    ...ctx,
    snapshots: { ...ctx.snapshots, ...back.snapshots },
    previous: { ...ctx.previous, ...back.previous },
    sessions: { ...ctx.sessions, ...back.sessions },
  };
}

/** The session's snapshot the store has folded (or the one before its last event), when it is at or before `seq` (undefined: none). */
export function currentSnapshot(ctx: InspectorContext, sessionId: string, seq: number): SessionSnapshot | undefined {
  const current = ctx.snapshots[sessionId];
  if (current && current.context.seq <= seq) return current;
  const previous = ctx.previous[sessionId];
  return previous && previous.context.seq <= seq ? previous : undefined;
}

/** Where a follow of the log stopped (index-store.ts keeps it): the position, and every session then. */
export interface FollowedState {
  position: number;
  sessions: readonly { snapshot: SessionSnapshot; previous: SessionSnapshot | null; summary: SessionSummary }[];
}

/** The context a restarted inspector starts from: where its follow of the log stopped (index-store.ts), or the log's start. */
export function resumedContext(followed?: FollowedState): InspectorContext {
  const ctx: InspectorContext = { position: followed?.position ?? 0, snapshots: {}, previous: {}, sessions: {}, checkpoints: [] };
  for (const s of followed?.sessions ?? []) {
    const id = s.snapshot.context.sessionId;
    ctx.snapshots[id] = s.snapshot;
    if (s.previous) ctx.previous[id] = s.previous;
    ctx.sessions[id] = s.summary;
  }
  return ctx;
}

export function createInspectorStore(followed?: FollowedState) {
  return createStore({
    context: resumedContext(followed),
    on: {
      committed: (ctx, e: { events: readonly SessionEvent[]; through?: number }) => foldBatch(ctx, e.events, e.through),
      // deleted from the log, or let go by a follow that keeps them in its index
      dropped: (ctx, e: { ids: readonly string[] }) => withoutSessions(ctx, e.ids),
      loaded: (ctx, e: { sessions: FollowedState['sessions'] }) => withSessions(ctx, e.sessions),
    },
  });
}

export type InspectorStore = ReturnType<typeof createInspectorStore>;

/** Resolves once the store has folded the log up to `position`. */
export function whenFolded(store: InspectorStore, position: number): Promise<void> {
  return new Promise((resolve) => {
    if (store.getSnapshot().context.position >= position) return resolve();
    const sub = store.subscribe((snap) => {
      if (snap.context.position >= position) {
        sub.unsubscribe();
        resolve();
      }
    });
  });
}
