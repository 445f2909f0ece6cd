/**
 * What `verifyLog` reads: a log as stored, each event decoded or `Undecodable` (where, and why), as the
 * EventLog port decodes eagerly. Sources: a SQLite file's rows (sqlite-source.ts), any EventLog with
 * its quarantines (port-source.ts, for NATS), an export file (export-source.ts).
 */
import type { SessionEvent } from '../events/envelope.ts';
import type { Db } from '../storage/sqlite/database.ts';

/** A stored event the current catalog and codec refuse to decode (upcasters included). */
export interface Undecodable {
  sessionId: string;
  /** Its sequence when the store records it outside the payload (a SQLite row); null when unknown (a JetStream message). */
  seq: number | null;
  /** Its log position (row position, stream sequence, export frame number). */
  position: number | null;
  /** The decode error's code (decode_failed, unknown_event_type, unsupported_event_version, invalid_payload...). */
  code: string;
  reason: string;
}

export type StoredItem = { event: SessionEvent } | { undecodable: Undecodable };

/** A session snapshot as the snapshot store holds it, not yet trusted. */
export interface StoredSnapshot {
  seq: number;
  /** The machine version that folded it (`MACHINE_VERSION` of the build that stored it). */
  machine: string;
  /** The parsed JSON: a `SessionSnapshot` if whoever wrote it was sessiond. */
  data: unknown;
}

/** A problem of the whole log, not of one session (a damaged export frame, an upgrade that fails). */
export interface LogProblem {
  kind: 'undecodable' | 'upgrade_fails';
  reason: string;
}

export interface StoredLog {
  /** What it is, for the output: a file name, `NATS nats://... (stream X)`. */
  readonly describe: string;
  /** Lines saying how it was read (read-only in place, a migrated copy, what could not be compared). */
  readonly notes: string[];
  /** An export file: evidence, not authority; an approval it never acted on is a problem (a replay withholds it). */
  readonly evidence?: boolean;
  /** Problems found while opening or reading it that belong to no session. */
  readonly problems: LogProblem[];
  /** Stored events in commit order, whole log, a page at a time. */
  pages(): AsyncIterable<StoredItem[]>;
  /** One session's stored events in sequence order, a page at a time. */
  session(sessionId: string): AsyncIterable<StoredItem[]>;
  /** The session's stored snapshot, if the store has one this source can read. */
  snapshot(sessionId: string): Promise<StoredSnapshot | undefined>;
  /** Events stored (for progress; an estimate where the store only knows messages). */
  size(): Promise<number>;
  /** The SQLite database whose projection tables hold what the projector folded from this log. */
  readonly projectionDb?: Db;
  close(): Promise<void>;
}

export const isUndecodable = (item: StoredItem): item is { undecodable: Undecodable } => 'undecodable' in item;
