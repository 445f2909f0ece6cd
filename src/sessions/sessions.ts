/**
 * `Sessions`: one way to drive sessions, whoever runs them (the embedded engine, a NATS deployment's
 * workers through `SessiondClient`, a log at rest through `logSessions`); each passes
 * `sessionsContract`. Types only, so the NATS client loads neither the machine nor SQLite.
 */
import type { AdmitReceipt, AdmitRequest } from '../input/admit.ts';
import type { DropPendingRequest, DropPendingResult } from '../input/drop.ts';
import type { ResolveResult } from '../input/resolve.ts';
import type { CancelResult, ResumeResult } from '../execution/session-execution.ts';
import type { SessionView } from '../machines/session-view.ts';
import type { ExecutionState } from '../machines/session-context.ts';
import type { SessionEvent } from '../events/envelope.ts';
import type { TagChanges, TagResult } from '../events/tags.ts';
import type { BudgetRequest, BudgetResult } from './budget.ts';
import type { ForkOptions, ForkResult } from './fork-result.ts';
import type { ListFilter, SessionPage } from './list.ts';
import type { ActorOptions } from './actor.ts';
import type { TenantBudgetView } from './tenant-budget.ts';

/**
 * What a wake did: `started` (a turn began), `running_here` (already running where it was asked),
 * `nothing_pending`, `refused` (the machine said no, and why), `failed`, `closed` (the engine is
 * closing), or `requested` where nothing runs turns in-process (a log at rest: the worker watching
 * it picks the wake up).
 */
export type WakeResult = ResumeResult | { status: 'requested' };

/**
 * A session as people and services see it (owner, lease, phase, pending inputs without their
 * prompts, recovery, usage) and its current or last execution. The same shape from every
 * implementation, and on the wire (the NATS `status` reply).
 */
export interface SessionStatus extends SessionView {
  /** The current (or last) execution; `inputIds` lists its first `EXECUTION_INPUTS_SHOWN` inputs, `inputCount` counts them all. */
  execution: (ExecutionState & { inputCount: number }) | null;
  /** A model call of the running turn waits for room under the deployment's limits (src/capacity/): since when, and the limits at work. */
  capacity?: CapacityWait;
  /** The budget of the session's tenant (`ownedBy`), when it has one: what all of its sessions may spend together, and spent. */
  tenantBudget?: TenantBudgetView;
}

/** A model call waiting for room (`SessionStatus.capacity`). */
export interface CapacityWait {
  /** When it started to wait (ms since the epoch). */
  since: number;
  /** The limits it draws from that hold it (e.g. `model:gpt-4o` at 2 of 2). */
  limits: { scope: string; limit: number; inFlight: number; waiting: number }[];
}

/** Input ids of an execution a status lists at most (`inputCount` counts them all). */
export const EXECUTION_INPUTS_SHOWN = 100;

export interface StatusOptions {
  /** Index of the first pending input to list (pages of `PENDING_PAGE`; default 0). */
  pendingFrom?: number;
}

export interface FollowOptions {
  /** Events up to this seq count as seen: delivery starts at the next one (default 0: the whole session). */
  afterSeq?: number;
  /** The handler threw, or the events could not be read (default: one line on stderr). Delivery goes on with the next event. */
  onError?: (err: unknown) => void;
}

export interface EventsOptions {
  /** Events up to this seq are left out (default 0: from the first). */
  afterSeq?: number;
  /** At most this many (default: every one). */
  limit?: number;
}

export interface EventSubscription {
  /** Seq of the last event delivered (the `afterSeq` given, before the first). */
  readonly lastSeq: number;
  close(): Promise<void>;
}

export type SessionEventHandler = (event: SessionEvent) => void | Promise<void>;

export interface DecisionOptions extends ActorOptions {
  /** Why (at most 1000 characters): recorded, shown, and told to the model on a denial. */
  reason?: string;
}

export interface Sessions {
  /** Admits a prompt (idempotent by input id; one is generated when absent) and, unless `wake: false`, wakes the session. */
  admit(sessionId: string, request: AdmitRequest): Promise<AdmitReceipt>;
  /** Runs the session's pending inputs, or says why not. Rejects with `not_found` for a session with no events. */
  wake(sessionId: string): Promise<WakeResult>;
  /** Cancels the execution in progress (`executionId`: only that one). Cancellation is final. `actor`: who cancels (recorded). */
  cancel(sessionId: string, reason?: string, executionId?: string, options?: ActorOptions): Promise<CancelResult>;
  /** Drops the session's pending inputs unrun (all, or those named): an operator unblocking a session. */
  dropPending(sessionId: string, request?: DropPendingRequest): Promise<DropPendingResult>;
  /**
   * A person's decision on a tool call the turn waits for (`defineTool({ needsApproval })`,
   * `ctx.requestApproval`): approved, the call runs once when the turn resumes; denied, it never
   * runs and the model is told why. Idempotent (the same decision again: `resolved: false`); a
   * different second decision is refused (`already_resolved`).
   */
  approve(sessionId: string, callId: string, options?: DecisionOptions): Promise<ResolveResult>;
  deny(sessionId: string, callId: string, options?: DecisionOptions): Promise<ResolveResult>;
  /** Delivers the value a turn waits for (`ctx.waitFor(name)`); the turn resumes with it. Idempotent as `approve`. */
  resolve(sessionId: string, name: string, options?: { data?: unknown } & ActorOptions): Promise<ResolveResult>;
  /** The session now. Rejects with `not_found` for a session with no events. */
  status(sessionId: string, options?: StatusOptions): Promise<SessionStatus>;
  /**
   * Changes the session's tags: a value sets a key, `null` removes it (at most `MAX_TAGS` in all,
   * else `limit_exceeded`). Idempotent: tags it has already change nothing (`changed: false`).
   * Rejects with `not_found` for a session with no events (an admission's `tags` create them).
   */
  tag(sessionId: string, tags: TagChanges): Promise<TagResult>;
  /**
   * The session's budget and spend; with `tokens`, `costUsd` or `reset`, changes it first (one
   * `budget.set` event). A turn whose session has spent its budget stops before its next model call
   * and settles failed `budget_exceeded`. For the admin and trusted callers: on NATS only the
   * trusted subject takes it (never a tenant's), the gateway asks for `manage`. Rejects with
   * `not_found` for a session with no events.
   */
  budget(sessionId: string, request?: BudgetRequest): Promise<BudgetResult>;
  /**
   * Starts session `sessionId` as a fork of `sourceId`: its first event holds the source's
   * conversation up to a settled point (`at`, default the source's last), then it lives its own
   * life. Rejects with `not_settled` (naming the nearest settled sequences) for a point inside a
   * turn, `session_exists` for an id that has events (the same fork sent again answers `created:
   * false`), `not_found` for a source with no events.
   */
  fork(sourceId: string, sessionId: string, options?: ForkOptions): Promise<ForkResult>;
  /**
   * A page of sessions, newest first, that match the filter (state, waiting, tags, updated since);
   * `next` is the cursor of the following page (`after`), null on the last. Read from the
   * projection, brought up to the log's head first where this process can (an engine, a log at
   * rest); on NATS a worker answers from its projection, which follows the stream.
   */
  list(filter?: ListFilter): Promise<SessionPage>;
  /**
   * Every committed event of the session after `afterSeq`, in order, each once: what is in the log
   * first, then events as they commit (gaps filled from the log). The handler's promise is awaited
   * before the next event.
   */
  follow(sessionId: string, handler: SessionEventHandler, options?: FollowOptions): Promise<EventSubscription>;
  /**
   * The session's committed events after `afterSeq` (default 0), in order, at most `limit` (default
   * every one): what `follow` delivers first, as one read. Rejects with `not_found` for a session
   * with no events.
   */
  events(sessionId: string, options?: EventsOptions): Promise<SessionEvent[]>;
  close(): Promise<void>;
}
