/**
 * The shapes of the conversation view (conversation.ts folds them from events; conversation-at.ts
 * pages them for the inspector's route; client.js renders them). Every field is plain JSON.
 */
import type { Continuation, Usage, WaitKind, WaitOutcome } from '../events/catalog.ts';
import type { Bounded, ErrorView, PartView } from './bounded.ts';

export interface Base {
  /** Place in `entries` (stable: entries are only ever appended). */
  index: number;
  /** Sequence and time the entry joined the conversation. */
  seq: number;
  time: number;
  /** Sequence of the latest event that changed the entry. */
  changedSeq: number;
  /** Copied from the source by a fork (`session.forked`): no times of its own. */
  forked?: true;
}

export interface PromptEntry extends Base {
  kind: 'prompt';
  inputId: string;
  /** `queued`: admitted, waiting for a turn; `in_turn`: promoted; `dropped`: dropped unrun. */
  state: 'queued' | 'in_turn' | 'dropped';
  source: 'user' | 'recovery';
  delivery: 'queue' | 'steer';
  admittedSeq: number;
  admittedAt: number;
  /** The turn's execution that took it (null until promoted). */
  executionId: string | null;
  /** The prompt as text (image and file parts as notes, never their bytes). */
  text: Bounded;
  /** A prompt of parts, one view per part (null for a string prompt). */
  parts: PartView[] | null;
  /** On a continuation: what it continues (the prompt text is the runner's note). */
  continues: { reason: Continuation['reason']; executionId: string; phase: string; retryTools: string[] } | null;
  notBefore: number | null;
  droppedReason: string | null;
  /** Who dropped it (`input.dropped`'s actor). */
  droppedBy?: string;
}

export type TurnOutcome = 'succeeded' | 'failed' | 'handed_back' | 'waiting' | 'cancelled' | 'interrupted';

export interface TurnEntry extends Base {
  kind: 'turn';
  executionId: string;
  ownerId: string;
  leaseMs: number;
  renewals: number;
  /** Null while it runs. `handed_back`: settled `released` (a worker shut down); `interrupted`: recovered after its lease expired. */
  outcome: TurnOutcome | null;
  error: ErrorView | null;
  cancelReason: string | null;
  /** Who cancelled it (`execution.cancelled`'s actor). */
  cancelledBy?: string;
  /** What a `waiting` turn waits for. */
  waitingFor: { kind: WaitKind; name: string; tool: string | null }[];
  endedSeq: number | null;
  durationMs: number | null;
}

export interface ToolPart {
  type: 'tool';
  callId: string;
  name: string;
  seq: number;
  input: Bounded | null;
  durable: boolean;
  idempotencyKey: string | null;
  state: 'called' | 'awaiting_approval' | 'approved' | 'denied' | 'cancelled' | 'running' | 'succeeded' | 'failed';
  output: Bounded | null;
  error: ErrorView | null;
  startedAt: number | null;
  endedSeq: number | null;
  durationMs: number | null;
  /** The execution it ran in, when not the step's own (an approved call runs when its turn resumes). */
  ranIn: string | null;
  approval: {
    sinceSeq: number;
    since: number;
    outcome: 'approved' | 'denied' | 'cancelled' | null;
    reason: string | null;
    /** Who decided (`wait.resolved`'s actor). */
    actor?: string;
    resolvedSeq: number | null;
    waitedMs: number | null;
  } | null;
}

/** `partial`: the text a step had streamed when it was last recorded (`text.streamed`), not yet completed. */
export type StepPart = { type: 'text' | 'reasoning'; partId: string; seq: number; text: Bounded; partial?: true } | ToolPart;

export interface StepEntry extends Base {
  kind: 'step';
  executionId: string;
  messageId: string;
  step: number | null;
  status: 'running' | 'completed' | 'failed' | 'recovered';
  finish: string | null;
  usage: Usage | null;
  error: ErrorView | null;
  recoveredReason: string | null;
  parts: StepPart[];
  endedSeq: number | null;
  durationMs: number | null;
}

export interface WaitEntry extends Base {
  kind: 'wait';
  executionId: string;
  waitKind: WaitKind;
  name: string;
  until: number | null;
  outcome: WaitOutcome | null;
  reason: string | null;
  data: Bounded | null;
  /** Who delivered or cancelled it. */
  actor?: string;
  resolvedSeq: number | null;
  waitedMs: number | null;
  /** A session call's child session (`waitKind` session); null for the others. */
  child: string | null;
  /** A session call's answer once delivered: how the child's turn ended, its final text, why it failed. */
  answer: { outcome: string; text: Bounded; error: Bounded | null } | null;
}

export interface CompactionEntry extends Base {
  kind: 'compaction';
  executionId: string;
  messageId: string;
  reason: string | null;
  summary: Bounded | null;
  usage: Usage | null;
  endedSeq: number | null;
  durationMs: number | null;
}

export interface RecoveryEntry extends Base {
  kind: 'recovery';
  executionId: string;
  completedSeq: number | null;
  phase: string | null;
  continuationInputId: string | null;
  error: ErrorView | null;
  wakeAttempts: number;
  wakeDeliveredSeq: number | null;
  wakeFailed: { attempt: number; error: ErrorView; parked: boolean } | null;
}

export interface ForkEntry extends Base {
  kind: 'fork';
  from: { sessionId: string; seq: number };
  /** Conversation items the fork started with (the entries before this one). */
  items: number;
}

export type ConversationEntry = PromptEntry | TurnEntry | StepEntry | WaitEntry | CompactionEntry | RecoveryEntry | ForkEntry;

export interface Conversation {
  sessionId: string;
  /** Sequence, id and time of the last event folded (0, null, 0 before any). */
  seq: number;
  eventId: string | null;
  time: number;
  entries: readonly ConversationEntry[];
  /** Prompts admitted and not yet promoted (or dropped), in admission order. */
  queued: readonly PromptEntry[];
  /**
   * A tail (conversation-marks.ts): the index of `entries[0]`, the entries before it left out
   * (they were final at the sequence the tail was folded from). Absent: 0, every entry.
   */
  first?: number;
}

/** An entry before it has its place (distributive: each kind keeps its fields). */
export type Draft<T extends ConversationEntry> = T extends unknown ? Omit<T, 'index'> : never;
