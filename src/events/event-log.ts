/**
 * The event log port: per-session 1-based sequences fenced by `expectedSeq` (a stale one throws
 * `SequenceConflictError`), positions ordering commits globally. Implementations: the SQLite log and
 * the JetStream log, one contract suite (testing/event-log-contract.ts). Guarantees:
 * docs/architecture.md#the-event-log.
 */
import { ErrorCode, SessiondError } from '../errors.ts';
import type { DraftEvent, SessionEvent } from './envelope.ts';

export interface SubscribeOptions {
  /** Deliver commits with position greater than this (0 = from the beginning). */
  after?: number;
  /**
   * Called with committed events in commit order, whole batches only (events that share a position
   * arrive in the same call): one commit, or several when more are ready at once (a subscriber that
   * catches up, or several commits landing together), so a handler can fold them in one transaction.
   * The SQLite log hands up to 1000 events per call, JetStream what it has received (whole messages,
   * up to about 1000 events). The next call waits for the returned promise.
   */
  onBatch: (events: SessionEvent[]) => void | Promise<void>;
  /** A handler that throws stops the subscription and lands here (default: logged to stderr). */
  onError?: (err: unknown) => void;
}

export interface ReadPagesOptions {
  /** Read commits with position greater than this (default 0: from the beginning). */
  after?: number;
  /** Events per page (default `DEFAULT_PAGE_SIZE`); events sharing a position are never split. */
  pageSize?: number;
}

export const DEFAULT_PAGE_SIZE = 1000;

/** `pageSize` checked: a whole number >= 1, or the default. */
export function pageSizeOption(pageSize: number | undefined): number {
  if (pageSize === undefined) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(pageSize) || pageSize < 1) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Invalid readPages option pageSize=${String(pageSize)}: use a whole number of events >= 1 (default ${DEFAULT_PAGE_SIZE}).`,
    );
  }
  return pageSize;
}

export interface Subscription {
  /** Position of the last batch handed to `onBatch` and finished. */
  readonly position: number;
  close(): Promise<void>;
}

export interface EventLog {
  /** Human-readable name for logs: "sqlite:/path" or "nats:stream". */
  readonly name: string;
  /**
   * Appends `drafts` to a session whose last sequence must be `expectedSeq` (0 for a new session),
   * atomically. Returns the committed events. A retry of an append whose events are already
   * committed (same ids) returns those events without writing them again.
   */
  append(sessionId: string, expectedSeq: number, drafts: DraftEvent[]): Promise<SessionEvent[]>;
  /** A session's events with seq > afterSeq, in order (limit: at most that many). */
  readSession(sessionId: string, options?: { afterSeq?: number; limit?: number }): Promise<SessionEvent[]>;
  /** A session's last sequence (0 when it has no events). */
  lastSeq(sessionId: string): Promise<number>;
  /** Events in commit order with position > after (limit: at most that many, whole batches). */
  readAll(options?: { after?: number; limit?: number }): Promise<SessionEvent[]>;
  /**
   * The log from `after` as pages, in commit order, reading it once (JetStream: one ordered consumer
   * for the whole read, not one per page). A page never splits events that share a position (a
   * JetStream append; SQLite gives every event its own) and holds at most `pageSize` events (default
   * 1000), unless one position alone has more: then they are a page of their own. The read ends at
   * the head it reaches: commits made while reading are included up to some point, never with a gap.
   * Breaking out of the loop ends the read and frees what it holds. Stored messages that are not
   * valid batches are quarantined as `readAll` does (skipped, reported once).
   *
   *   for await (const page of log.readPages({ after: checkpoint })) fold(page);
   */
  readPages(options?: ReadPagesOptions): AsyncIterable<SessionEvent[]>;
  /** Position of the last commit (0 when empty). */
  head(): Promise<number>;
  /** Committed events in commit order, from `after`, as they are committed (in this or any process). */
  subscribe(options: SubscribeOptions): Subscription;
  close(): Promise<void>;
}

/** Thrown when some, but not all, of an append's event ids are already committed. */
export function duplicateEventError(sessionId: string, ids: string[]): SessiondError {
  return new SessiondError(
    ErrorCode.DuplicateEvent,
    `Append to session ${sessionId} reuses event ids already committed (${ids.slice(0, 3).join(', ')}${ids.length > 3 ? ', ...' : ''}) together with new ones. Retry the exact same batch, or use fresh ids.`,
    { details: { sessionId, ids } },
  );
}

export function logClosedError(name: string): SessiondError {
  return new SessiondError(ErrorCode.LogClosed, `Event log ${name} is closed.`);
}
