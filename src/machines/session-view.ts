/**
 * What a session looks like to the people and services that ask (status, the NATS status reply,
 * `sessiond status`, the inspector): derived once from the snapshot, here. The rules live here only:
 * a session has an owner while its execution is unfinished (`outcome === null`), the lease is live
 * until `expiresAt` as judged at `now`, and the phase belongs to the unfinished execution.
 */
import type { ExecutionPhase, Usage } from '../events/catalog.ts';
import type { Tags } from '../events/tags.ts';
import { budgetView, type BudgetView } from './budget-view.ts';
import { stateOf, type SessionSnapshot, type SessionStateValue } from './decider.ts';
import {
  openWaits,
  pendingBlobBytes,
  pendingBytes,
  type ExecutionState,
  type PendingInput,
  type RecoveryState,
  type SessionContext,
  type Wait,
} from './session-context.ts';

export interface SessionView {
  sessionId: string;
  state: SessionStateValue;
  /** Sequence of the last event folded (0: no events). */
  seq: number;
  /** The current execution, or the last one. */
  executionId: string | null;
  /** Who runs the session: the owner of an unfinished execution (null once it ended). */
  owner: string | null;
  /** When the owner's lease runs out (null without an owner). */
  leaseExpiresAt: number | null;
  /** Is the owner's lease live at the time the view was taken? */
  leaseLive: boolean;
  /** Lease left at that time, in ms (0 when none or expired: a recovery is due). */
  leaseLeftMs: number;
  /** How far the unfinished execution got (`unknown`: an effect may be in flight); null without one. */
  phase: ExecutionPhase | null;
  /** How the last execution ended (null while it runs, or before any). */
  outcome: ExecutionState['outcome'];
  /**
   * Inputs admitted and not yet in a turn, in order, without their prompts: one page of at most
   * `PENDING_PAGE` from index `pendingFrom` (0 unless asked), so a view stays small however many wait.
   */
  pending: Omit<PendingInput, 'prompt'>[];
  /** Index of `pending[0]` among all pending inputs. */
  pendingFrom: number;
  /** How many inputs wait in all, and the bytes of their prompts (what the session's limits count). */
  pendingCount: number;
  pendingBytes: number;
  /** The bytes of their image and file parts stored as blobs beside the log (counted apart: `maxPendingBlobBytes`). */
  pendingBlobBytes: number;
  recovery: RecoveryState | null;
  /**
   * The turn's waits: what it waits for (`outcome` null: an approval of a call, with its tool and
   * input; a signal; a timer, with `until`), and those already resolved in this turn. A session
   * waits when `outcome` is `waiting` and one of these is open.
   */
  waits: Wait[];
  /** Executions claimed so far. */
  executions: number;
  /** Tokens used by the session's model steps and compactions (and their cost, where priced). */
  usage: Usage;
  /** The session's budget and its spend since the latest reset (null: none set; `sessiond budget`). */
  budget: BudgetView | null;
  /** The session's tags (keys sorted). */
  tags: Tags;
  /** The session and sequence it was forked from (`sessions.fork`); null when it is not a fork. */
  forkedFrom: { sessionId: string; seq: number } | null;
  /** Who the session belongs to (fixed by its first admission or fork; `owner` above is the lease holder), null when no one. */
  ownedBy: string | null;
  /** The session whose turn last called this one (`ctx.callSession`), null when none has: its parent. */
  calledBy: string | null;
  /** The sessions the turn waits on now (its open session calls): its children. */
  children: string[];
}

/** Pending inputs a view lists at most (the rest are counted; ask for the next page with `pendingFrom`). */
export const PENDING_PAGE = 100;

/** One page of a session's pending inputs, without their prompts, from index `from`. */
export function pendingPage(ctx: SessionContext, from = 0): Pick<SessionView, 'pending' | 'pendingFrom'> {
  const start = Math.max(0, Math.min(from, ctx.pending.length));
  return { pending: ctx.pending.slice(start, start + PENDING_PAGE).map(({ prompt: _prompt, ...input }) => input), pendingFrom: start };
}

export function sessionView(snapshot: SessionSnapshot, now: number): SessionView {
  const ctx = snapshot.context;
  const exec = ctx.execution;
  const unfinished = exec !== null && exec.outcome === null;
  const left = unfinished ? Math.max(0, exec.expiresAt - now) : 0;
  return {
    sessionId: ctx.sessionId,
    state: stateOf(snapshot),
    seq: ctx.seq,
    executionId: exec?.id ?? null,
    owner: unfinished ? exec.ownerId : null,
    leaseExpiresAt: unfinished ? exec.expiresAt : null,
    leaseLive: left > 0,
    leaseLeftMs: left,
    phase: unfinished ? exec.phase : null,
    outcome: exec?.outcome ?? null,
    ...pendingPage(ctx),
    pendingCount: ctx.pending.length,
    pendingBytes: pendingBytes(ctx),
    pendingBlobBytes: pendingBlobBytes(ctx),
    recovery: ctx.recovery,
    waits: ctx.waits,
    executions: ctx.executions,
    usage: ctx.usage,
    budget: budgetView(ctx.budget, ctx.usage),
    tags: ctx.tags,
    forkedFrom: ctx.forkedFrom,
    ownedBy: ctx.ownedBy ?? null,
    calledBy: ctx.calledBy ?? null,
    children: childrenOf(ctx),
  };
}

/** The sessions a turn waits on now: its open session calls' children, each once. */
export function childrenOf(ctx: SessionSnapshot['context']): string[] {
  return [...new Set(openWaits(ctx).flatMap((w) => (w.kind === 'session' && w.child ? [w.child.sessionId] : [])))];
}
