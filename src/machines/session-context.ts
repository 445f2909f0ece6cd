/**
 * The session's folded state (the machine's context) and the pure fold over committed events.
 * The state *value* (idle, claimed, ...) lives in the machine; everything else lives here.
 */
import type { Continuation, Delivery, ExecutionPhase, Prompt, RecordedError, Usage, WaitKind, WaitOutcome } from '../events/catalog.ts';
import { promptBlobBytes, promptBytes } from '../events/prompt.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { applyTagChanges, type Tags } from '../events/tags.ts';
import { addUsage, applyBudgetSet, type SessionBudget } from './budget-spend.ts';

export interface ExecutionState {
  id: string;
  ownerId: string;
  leaseMs: number;
  expiresAt: number;
  /** Latest assistant sequence when the claim was acquired (-1 when none). */
  assistantSeq: number;
  claimedSeq: number;
  /** The turn's span and its parent's (W3C traceparent), from `execution.started`: a continuation links and inherits them. */
  traceparent?: string;
  parentTraceparent?: string;
  phase: ExecutionPhase;
  started: boolean;
  cancelled: boolean;
  /** Who cancelled it (`execution.cancelled`'s actor). */
  cancelledBy?: string;
  outcome: 'succeeded' | 'failed' | 'released' | 'waiting' | 'cancelled' | null;
  error: RecordedError | null;
  /** The assistant message of the step in progress (null between steps). */
  openStep: string | null;
  /** The execution's latest assistant message (null before its first step). */
  lastMessage: string | null;
  /** Tool calls journaled and not yet settled: what recovery or a cancel must seal. */
  openTools: OpenTool[];
  /** The inputs promoted into this execution, in order (what a continuation continues). */
  inputIds: string[];
  /**
   * The turn this execution runs: the input that started it (a continuation's execution keeps the
   * turn it continues). Session calls derive their child input ids from it. Absent before a promotion.
   */
  turnId?: string;
  /** Tokens (and cost) this execution's model steps and compactions used, as recorded. */
  usage?: Usage;
}

export interface OpenTool {
  callId: string;
  messageId: string;
  name: string;
  durable: boolean;
  idempotencyKey: string | null;
}

/**
 * Something a turn waits for (`wait.started`), and how it ended (`wait.resolved`). A wait is keyed
 * by its kind and name within the turn; an approval's name is its call id.
 */
export interface Wait {
  kind: WaitKind;
  name: string;
  /** The execution that waited. */
  executionId: string;
  /** When the turn started to wait (the event's time). */
  since: number;
  /** A timer's time, or a signal's timeout (null: none). */
  until: number | null;
  /** An approval's call: its assistant message, tool, input, and the journal it runs with. */
  messageId: string | null;
  callId: string | null;
  tool: string | null;
  input?: unknown;
  durable: boolean;
  idempotencyKey: string | null;
  outcome: WaitOutcome | null;
  resolvedAt: number | null;
  reason: string | null;
  /** A delivered signal's value. */
  data?: unknown;
  /** Who resolved it (`wait.resolved`'s actor). */
  actor?: string;
  /** An approved call's (or a session tool call's) `tool.started` is in the log: it never starts again. */
  started: boolean;
  /** A session call's child: the session and the input admitted into it. */
  child?: { sessionId: string; inputId: string };
}

/** A call a wait held that may start now: an approved one, or a session tool call whose child's end came (or whose time ran out). */
export function startable(w: Wait): boolean {
  return w.kind === 'approval' ? w.outcome === 'approved' : w.kind === 'session' && (w.outcome === 'delivered' || w.outcome === 'timed_out');
}

/** Where a committed event is in the log: its id and its position (null when the log gave none). */
export interface EventRef {
  id: string;
  position: number | null;
}

export interface PendingInput {
  inputId: string;
  delivery: Delivery;
  seq: number;
  wake: boolean;
  /** `recovery` for the continuation of an interrupted or handed-back turn (it runs first). */
  source: 'user' | 'recovery';
  /** The prompt itself, so a turn needs no read of the log to get it (dropped once promoted). */
  prompt: Prompt;
  /** On a continuation: what it continues. */
  continues?: Continuation;
  /** A scheduled prompt: no turn takes it before this time. */
  notBefore?: number;
  /** The tags its admission gave the session (what an exact resend must carry again). */
  tags?: Tags;
  /** The caller's trace context (W3C traceparent) it was admitted with: the parent of the turn that runs it. */
  traceparent?: string;
  /** The `input.admitted` event that admitted it (what a stored snapshot's claim is checked against; always set by the fold). */
  admittedBy?: EventRef;
  /**
   * Set on every pending input of a snapshot read from a snapshot store, until the command handler
   * has found its `input.admitted` in the log (src/execution/command-handler.ts): the machine runs
   * and promotes only inputs the log admitted, never one a stored snapshot merely claims.
   */
  unverified?: true;
}

export interface RecoveryState {
  executionId: string;
  continuationInputId: string | null;
  wakePending: boolean;
  attempts: number;
  parked: boolean;
  /** Time of the last wake attempt (for backoff), 0 before any. */
  lastAttemptAt: number;
  lastError: RecordedError | null;
}

export interface SessionContext {
  sessionId: string;
  /** Sequence of the last event folded (0 before any). */
  seq: number;
  /** The last event folded (null before any): a stored snapshot is trusted only if the log has this event at `seq`. */
  head: EventRef | null;
  execution: ExecutionState | null;
  /** Sequence of the latest `step.started` (the latest assistant message), -1 when none. */
  lastAssistantSeq: number;
  /** Admitted and not yet promoted, in admission order. */
  pending: PendingInput[];
  /**
   * The latest admitted input ids with their admission sequences, oldest first, at most
   * `ADMISSION_WINDOW` of them: admission is idempotent by input id within that window (and for
   * every input still pending). Bounded so that a long session's snapshot, and the fold of each
   * admission, stay small.
   */
  admitted: readonly (readonly [inputId: string, seq: number])[];
  recovery: RecoveryState | null;
  /**
   * The waits of the turn in progress, across its executions (a turn that waits, resumes and waits
   * again keeps the first answers). Emptied when the turn ends: settled succeeded or failed,
   * cancelled (a cancel of a waiting turn resolves its waits `cancelled`).
   */
  waits: Wait[];
  /**
   * The latest waits resolved (at most `DECIDED_WINDOW`, oldest first), also those of turns that
   * ended: a decision sent again after its turn is over is known as already made.
   */
  decided: readonly Decided[];
  /** Number of executions claimed so far. */
  executions: number;
  /** The previous execution and its turn (what a continuation promoted into the next execution continues). */
  lastTurn?: { executionId: string; turnId: string } | null;
  /** Tokens used by the session's model steps and compactions, summed (as the servers reported them). */
  usage: Usage;
  /** The session's budget (`budget.set`): its limits and where its spend is counted from; null when none was set. */
  budget?: SessionBudget | null;
  /** The session's tags (from its admissions and `session.tagged`), keys sorted. */
  tags: Tags;
  /** A session forked from another (`session.forked`, its first event): the source and the sequence it was forked at. */
  forkedFrom: { sessionId: string; seq: number } | null;
  /** Who the session belongs to (its first event's `owner`), null when no one: fixed at creation, never changed. */
  ownedBy: string | null;
  /** The session whose turn last called this one (`ctx.callSession`: its latest admission with a `caller`); absent when none has. */
  calledBy?: string;
}

/** A wait that was resolved: its kind, name, outcome and when. */
export type Decided = readonly [kind: WaitKind, name: string, outcome: WaitOutcome, time: number];
/** Resolved waits remembered per session (the latest ones). */
export const DECIDED_WINDOW = 100;

/** Admissions remembered per session for idempotent admission (the latest ones). */
export const ADMISSION_WINDOW = 1000;

/** The admission sequence of an input the session remembers (latest admissions, pending inputs). */
export function admittedSeq(ctx: SessionContext, inputId: string): number | undefined {
  for (let i = ctx.admitted.length - 1; i >= 0; i--) if (ctx.admitted[i]![0] === inputId) return ctx.admitted[i]![1];
  return ctx.pending.find((p) => p.inputId === inputId)?.seq;
}

export function initialContext(sessionId: string): SessionContext {
  return {
    sessionId,
    seq: 0,
    head: null,
    execution: null,
    lastAssistantSeq: -1,
    pending: [],
    admitted: [],
    recovery: null,
    waits: [],
    decided: [],
    executions: 0,
    usage: { inputTokens: 0, outputTokens: 0 },
    budget: null,
    tags: {},
    forkedFrom: null,
    ownedBy: null,
  };
}

/** Folds one committed event into the context. Pure: returns a new context, never mutates. */
export function foldContext(ctx: SessionContext, event: SessionEvent): SessionContext {
  const next: SessionContext = { ...ctx, seq: event.seq, head: refOf(event) };
  const exec = ctx.execution;
  const forCurrent = (id: string) => exec !== null && exec.id === id;
  switch (event.type) {
    case 'execution.claimed': {
      const p = event.payload;
      next.execution = {
        id: p.executionId,
        ownerId: p.ownerId,
        leaseMs: p.leaseMs,
        expiresAt: p.expiresAt,
        assistantSeq: p.assistantSeq,
        claimedSeq: event.seq,
        phase: 'safe',
        started: false,
        cancelled: false,
        outcome: null,
        error: null,
        openStep: null,
        lastMessage: null,
        openTools: [],
        inputIds: [],
      };
      next.executions = ctx.executions + 1;
      if (exec) next.lastTurn = { executionId: exec.id, turnId: exec.turnId ?? exec.id };
      if (ctx.recovery?.wakePending) next.recovery = { ...ctx.recovery, wakePending: false };
      return next;
    }
    case 'execution.renewed':
      if (forCurrent(event.payload.executionId)) next.execution = { ...exec!, expiresAt: event.payload.expiresAt };
      return next;
    case 'execution.started':
      if (forCurrent(event.payload.executionId)) {
        const { traceparent, parentTraceparent } = event.payload;
        next.execution = { ...exec!, started: true, ...(traceparent ? { traceparent } : {}), ...(parentTraceparent ? { parentTraceparent } : {}) };
      }
      return next;
    case 'execution.phase':
      if (forCurrent(event.payload.executionId)) next.execution = { ...exec!, phase: event.payload.phase };
      return next;
    case 'execution.cancelled':
      if (forCurrent(event.payload.executionId) && exec!.outcome === null) {
        next.execution = {
          ...exec!,
          cancelled: true,
          outcome: 'cancelled',
          ...(event.payload.actor === undefined ? {} : { cancelledBy: event.payload.actor }),
        };
        next.waits = [];
      }
      return next;
    case 'execution.settled':
      if (forCurrent(event.payload.executionId) && exec!.outcome === null) {
        const outcome = event.payload.outcome;
        next.execution = { ...exec!, outcome, error: event.payload.error ?? null };
        if (outcome === 'succeeded' || outcome === 'failed') next.waits = []; // the turn is over
      }
      return next;
    case 'wait.started': {
      const p = event.payload;
      if (!forCurrent(p.executionId)) return next;
      const call = p.callId === undefined ? undefined : exec!.openTools.find((t) => t.callId === p.callId);
      next.waits = [
        ...ctx.waits.filter((w) => !(w.kind === p.kind && w.name === p.name)),
        {
          kind: p.kind,
          name: p.name,
          executionId: p.executionId,
          since: event.time,
          until: p.until ?? null,
          messageId: p.messageId ?? null,
          callId: p.callId ?? null,
          tool: p.tool ?? null,
          ...(p.input === undefined ? {} : { input: p.input }),
          durable: call?.durable ?? false,
          idempotencyKey: call?.idempotencyKey ?? null,
          outcome: null,
          resolvedAt: null,
          reason: null,
          started: false,
          ...(p.child ? { child: p.child } : {}),
        },
      ];
      // a call that waits for a person is not this execution's open work: it runs (or not) in the turn's next execution
      if (call) next.execution = { ...exec!, openTools: exec!.openTools.filter((t) => t !== call) };
      return next;
    }
    case 'wait.resolved': {
      const p = event.payload;
      const kept = ctx.decided.length >= DECIDED_WINDOW ? ctx.decided.slice(ctx.decided.length - DECIDED_WINDOW + 1) : ctx.decided;
      next.decided = [...kept, [p.kind, p.name, p.outcome, event.time]];
      if (p.outcome === 'cancelled' && openWaits(ctx).every((w) => w.kind === p.kind && w.name === p.name)) {
        next.waits = []; // the last wait of a cancelled turn: the turn is over
        if (p.actor !== undefined && exec?.id === p.executionId) next.execution = { ...exec, cancelledBy: p.actor };
        return next;
      }
      next.waits = ctx.waits.map((w) =>
        w.kind === p.kind && w.name === p.name && w.outcome === null
          ? {
              ...w,
              outcome: p.outcome,
              resolvedAt: event.time,
              reason: p.reason ?? null,
              ...(p.data === undefined ? {} : { data: p.data }),
              ...(p.actor === undefined ? {} : { actor: p.actor }),
            }
          : w,
      );
      return next;
    }
    case 'tool.started': {
      // an approved call (or a session tool call whose child answered) starts in the execution that resumed its turn: it becomes that execution's open work
      const w = ctx.waits.find((x) => x.callId === event.payload.callId && !x.started && startable(x));
      if (!w) return next;
      next.waits = ctx.waits.map((x) => (x === w ? { ...x, started: true } : x));
      if (forCurrent(event.payload.executionId) && !exec!.openTools.some((t) => t.callId === w.callId)) {
        const open: OpenTool = { callId: w.callId!, messageId: w.messageId!, name: w.tool!, durable: w.durable, idempotencyKey: w.idempotencyKey };
        next.execution = { ...exec!, openTools: [...exec!.openTools, open] };
      }
      return next;
    }
    case 'input.admitted': {
      const p = event.payload;
      next.pending = [
        ...ctx.pending,
        {
          inputId: p.inputId,
          delivery: p.delivery,
          seq: event.seq,
          wake: p.wake,
          source: p.source,
          prompt: p.prompt,
          ...(p.continues ? { continues: p.continues } : {}),
          ...(p.notBefore === undefined ? {} : { notBefore: p.notBefore }),
          ...(p.tags === undefined ? {} : { tags: p.tags }),
          ...(p.traceparent ? { traceparent: p.traceparent } : {}),
          admittedBy: refOf(event),
        },
      ];
      const kept = ctx.admitted.length >= ADMISSION_WINDOW ? ctx.admitted.slice(ctx.admitted.length - ADMISSION_WINDOW + 1) : ctx.admitted;
      next.admitted = [...kept, [p.inputId, event.seq]];
      if (p.tags) next.tags = applyTagChanges(ctx.tags, p.tags);
      if (p.owner !== undefined && ctx.seq === 0) next.ownedBy = p.owner;
      if (p.caller !== undefined) next.calledBy = p.caller;
      return next;
    }
    case 'session.tagged':
      next.tags = applyTagChanges(ctx.tags, event.payload.tags);
      return next;
    case 'session.forked': {
      const p = event.payload;
      next.forkedFrom = { sessionId: p.from.sessionId, seq: p.from.seq };
      if (p.tags) next.tags = applyTagChanges(ctx.tags, p.tags);
      if (p.owner !== undefined && ctx.seq === 0) next.ownedBy = p.owner;
      // the forked conversation's input ids are its user messages' ids: an admission must not take one again
      const ids = p.transcript.flatMap((i) => (i.type === 'user' ? [[i.inputId, event.seq] as const] : []));
      next.admitted = [...ctx.admitted, ...ids].slice(-ADMISSION_WINDOW);
      return next;
    }
    case 'input.dropped': {
      const dropped = new Set(event.payload.inputIds);
      next.pending = ctx.pending.filter((i) => !dropped.has(i.inputId));
      return next;
    }
    case 'input.promoted':
      next.pending = ctx.pending.filter((i) => i.inputId !== event.payload.inputId);
      if (forCurrent(event.payload.executionId))
        next.execution = { ...exec!, inputIds: [...exec!.inputIds, event.payload.inputId], turnId: exec!.turnId ?? turnOf(ctx, event.payload.inputId) };
      return next;
    case 'step.started':
      next.lastAssistantSeq = event.seq;
      if (forCurrent(event.payload.executionId)) next.execution = { ...exec!, openStep: event.payload.messageId, lastMessage: event.payload.messageId };
      return next;
    case 'compaction.completed':
      if (event.payload.usage) countUsage(next, event.payload.executionId, event.payload.usage);
      return next;
    case 'budget.set': {
      next.budget = applyBudgetSet(ctx.budget ?? null, event.payload, ctx.usage);
      return next;
    }
    // biome-ignore lint/suspicious/noFallthroughSwitchClause: step.ended closes the step as step.failed does
    case 'step.ended':
      if (event.payload.usage) countUsage(next, event.payload.executionId, event.payload.usage);
    // falls through: the step closes as a failed or recovered one does
    case 'step.failed':
    case 'step.recovered':
      // (next.execution: step.ended may have counted its usage into it)
      if (forCurrent(event.payload.executionId) && exec!.openStep === event.payload.messageId) next.execution = { ...next.execution!, openStep: null };
      return next;
    case 'tool.called':
      if (forCurrent(event.payload.executionId)) {
        const p = event.payload;
        next.execution = {
          ...exec!,
          openTools: [
            ...exec!.openTools,
            { callId: p.callId, messageId: p.messageId, name: p.name, durable: p.durable, idempotencyKey: p.idempotencyKey ?? null },
          ],
        };
      }
      return next;
    case 'tool.succeeded':
    case 'tool.failed':
      if (forCurrent(event.payload.executionId)) next.execution = { ...exec!, openTools: exec!.openTools.filter((t) => t.callId !== event.payload.callId) };
      return next;
    case 'recovery.completed':
      next.recovery = {
        executionId: event.payload.executionId,
        continuationInputId: event.payload.continuationInputId,
        wakePending: event.payload.continuationInputId !== null,
        attempts: 0,
        parked: false,
        lastAttemptAt: 0,
        lastError: event.payload.error ?? null,
      };
      return next;
    case 'recovery.wake_requested':
      if (ctx.recovery?.executionId === event.payload.executionId)
        next.recovery = { ...ctx.recovery, attempts: event.payload.attempt, lastAttemptAt: event.time };
      return next;
    case 'recovery.wake_delivered':
      if (ctx.recovery?.executionId === event.payload.executionId) next.recovery = { ...ctx.recovery, wakePending: false };
      return next;
    case 'recovery.wake_failed':
      if (ctx.recovery?.executionId === event.payload.executionId) {
        next.recovery = {
          ...ctx.recovery,
          attempts: event.payload.attempt,
          parked: event.payload.parked,
          wakePending: !event.payload.parked,
          lastError: event.payload.error,
        };
      }
      return next;
    default:
      return next;
  }
}

const refOf = (e: SessionEvent): EventRef => ({ id: e.id, position: e.position ?? null });

/** The turn's waits that have not ended. */
export function openWaits(ctx: SessionContext): Wait[] {
  return ctx.waits.filter((w) => w.outcome === null);
}

/** Is this pending input admitted by an event this fold saw in the log (not only claimed by a stored snapshot)? */
export const admittedInLog = (p: PendingInput): boolean => p.unverified !== true;

/** May a turn take this pending input at `now`: admitted in the log, and due (a scheduled prompt only from its time on)? */
export const runnableAt = (p: PendingInput, now: number): boolean => admittedInLog(p) && (p.notBefore === undefined || now >= p.notBefore);

/** Adds a model call's usage to the session's totals and to its execution's (when it is the current one). Mutates `next`, a fresh copy. */
function countUsage(next: SessionContext, executionId: string, usage: Usage): void {
  next.usage = addUsage(next.usage, usage);
  const exec = next.execution;
  if (exec !== null && exec.id === executionId) next.execution = { ...exec, usage: addUsage(exec.usage ?? { inputTokens: 0, outputTokens: 0 }, usage) };
}

/** The bytes of the prompts pending in a session (what its pending-bytes limit counts). */
export function pendingBytes(ctx: SessionContext): number {
  let total = 0;
  for (const p of ctx.pending) total += promptBytes(p.prompt);
  return total;
}

/** The bytes of the blob parts of the prompts pending in a session (what its pending-blob-bytes limit counts). */
export function pendingBlobBytes(ctx: SessionContext): number {
  let total = 0;
  for (const p of ctx.pending) total += promptBlobBytes(p.prompt);
  return total;
}

/** Is the current execution's lease live at `now`? (Settled executions hold no lease.) */
export function leaseLive(ctx: SessionContext, now: number): boolean {
  const e = ctx.execution;
  return e !== null && e.outcome === null && now < e.expiresAt;
}

/** The turn an input promoted first into an execution runs: its own, or the turn a continuation continues. */
function turnOf(ctx: SessionContext, inputId: string): string {
  const continues = ctx.pending.find((p) => p.inputId === inputId)?.continues;
  if (!continues) return inputId;
  return ctx.lastTurn?.executionId === continues.executionId ? ctx.lastTurn.turnId : continues.executionId;
}
