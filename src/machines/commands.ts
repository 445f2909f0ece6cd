/**
 * Commands the session machine decides (imperative names), and what a decision returns. Every
 * command carries `now`: time reaches decisions as data, never from a clock inside the machine.
 */
import {
  runnerEventTypes,
  type EventType,
  type PayloadInputOf,
  type SettleOutcome,
  type RecordedError,
  type Delivery,
  type Prompt,
  type WaitKind,
  type WaitOutcome,
  type TagChanges,
  type BudgetChange,
  type Tags,
} from '../events/catalog.ts';
import type { TranscriptItem } from '../events/transcript.ts';

/** An event the machine decided to write; the command handler stamps its id and time. */
export type ProtoEvent = { [K in EventType]: { type: K; payload: PayloadInputOf<K> } }[EventType];

export type Command =
  | { type: 'claim'; now: number; ownerId: string; executionId: string; leaseMs: number }
  /** `traceparent`: the turn's span; `parentTraceparent`: its parent (both W3C; recorded for continuations). */
  | { type: 'start'; now: number; ownerId: string; executionId: string; traceparent?: string; parentTraceparent?: string }
  | { type: 'renew'; now: number; ownerId: string; executionId: string }
  | { type: 'record'; now: number; ownerId: string; executionId: string; events: ProtoEvent[] }
  /** `released` hands the turn back: its open work is sealed and `continuationInputId` is admitted so another worker continues it. */
  | { type: 'settle'; now: number; ownerId: string; executionId: string; outcome: SettleOutcome; error?: RecordedError; continuationInputId?: string }
  /** `executionId`: cancel that execution only (a cancel sent again, or delivered late, never stops a later turn). */
  | { type: 'cancel'; now: number; reason?: string; executionId?: string; actor?: string }
  /** `limits`: the session's bounds on what may wait (refused past them); absent, nothing is checked (recovery's own admissions). */
  | {
      type: 'admit';
      now: number;
      inputId: string;
      prompt: Prompt;
      delivery: Delivery;
      wake: boolean;
      source?: 'user' | 'recovery';
      limits?: PendingLimits;
      /** A scheduled prompt: no turn takes it before this time. */
      notBefore?: number;
      /** Tags for the session (merged into those it has; at most `MAX_TAGS` in all). */
      tags?: Tags;
      /** Who admits: recorded as the session's owner when this admission creates it; refused (`not_owner`) on a session another owns. */
      owner?: string;
      /** The caller's trace context (W3C traceparent, already checked): the parent of the turn that runs it. */
      traceparent?: string;
      /** The session whose turn admits this input (`ctx.callSession`). */
      caller?: string;
    }
  /** Start a session as a fork of another: its first event holds the source's conversation up to `from.seq`; refused for a session that has events. */
  | { type: 'fork'; now: number; from: { sessionId: string; seq: number }; transcript: TranscriptItem[]; tags?: Tags; owner?: string }
  /** Change the session's tags (a value sets a key, null removes it); refused for a session with no events. */
  | { type: 'tag'; now: number; tags: TagChanges }
  /** Change the session's budget (limits set, removed or kept; `reset` counts spend from now); refused for a session with no events. */
  | { type: 'budget'; now: number; change: BudgetChange; actor?: string }
  /** Drop pending inputs unrun (all of them, or the ones named): an operator unblocking a session. */
  | { type: 'dropPending'; now: number; inputIds?: string[]; reason?: string; actor?: string }
  /** Seal an expired execution and admit one continuation (ids come with the command: the machine makes none). */
  | { type: 'recover'; now: number; continuationInputId: string; reason?: string }
  /**
   * End one of a waiting turn's waits (a person's decision, a signal's value, a timer's time).
   * When it is the last one open, `continuationInputId` is admitted: the turn resumes.
   */
  | {
      type: 'resolve';
      now: number;
      kind: WaitKind;
      name: string;
      outcome: Exclude<WaitOutcome, 'cancelled'>;
      reason?: string;
      data?: unknown;
      /** Who resolved it (recorded in `wait.resolved`). */
      actor?: string;
      continuationInputId: string;
    }
  /** Count an attempt at the durable recovery wake. */
  | { type: 'requestWake'; now: number }
  /** A recovery wake attempt failed; `park` gives up: the session is parked with the error, visibly. */
  | { type: 'failWake'; now: number; error: RecordedError; park: boolean };

export type CommandType = Command['type'];

/** What may wait in one session: admitted inputs not yet promoted, and the bytes of their prompts. */
export interface PendingLimits {
  maxPendingInputs: number;
  maxPendingBytes: number;
  /** The bytes of the blob parts of the pending prompts together (absent: not bounded here). */
  maxPendingBlobBytes?: number;
}

/** Why a command was refused; stable strings, safe to match on. */
export const Refusal = {
  LeaseLive: 'lease_live',
  OwnLeaseLive: 'own_lease_live',
  LeaseExpired: 'lease_expired',
  Recovering: 'recovering',
  ClaimLost: 'claim_lost',
  Cancelled: 'cancelled',
  AlreadySettled: 'already_settled',
  NotClaimed: 'not_claimed',
  AlreadyStarted: 'already_started',
  NothingToCancel: 'nothing_to_cancel',
  NotRunnerEvent: 'not_runner_event',
  NotPending: 'not_pending',
  AlreadyAdmitted: 'already_admitted',
  LeaseNotExpired: 'lease_not_expired',
  NothingToRecover: 'nothing_to_recover',
  NothingPending: 'nothing_pending',
  NoWakePending: 'no_wake_pending',
  PendingLimit: 'pending_limit',
  NothingToDrop: 'nothing_to_drop',
  Waiting: 'waiting',
  NoSuchWait: 'no_such_wait',
  AlreadyResolved: 'already_resolved',
  WrongOutcome: 'wrong_outcome',
  NotDue: 'not_due',
  NotApproved: 'not_approved',
  NothingToWaitFor: 'nothing_to_wait_for',
  TagLimit: 'tag_limit',
  NoEvents: 'no_events',
  NothingToChange: 'nothing_to_change',
  SessionExists: 'session_exists',
  NotOwner: 'not_owner',
} as const;
export type Refusal = (typeof Refusal)[keyof typeof Refusal];

export type Decision = { ok: true; events: ProtoEvent[] } | { ok: false; reason: Refusal; message: string };

/** Events a runner may write through `record` (the rest belong to the engine itself): the catalog's `runner` types. */
export const RUNNER_EVENT_TYPES: ReadonlySet<EventType> = runnerEventTypes;
