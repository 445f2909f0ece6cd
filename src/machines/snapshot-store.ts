/**
 * The port for session snapshots kept between loads, and the machine version tying a snapshot to
 * the definition that folded it. A snapshot is a cache, checked against the log before use.
 * Implementations: storage/sqlite/sqlite-snapshot-store.ts, nats/snapshot-store.ts (one contract suite,
 * testing/snapshot-store-contract.ts). Why: docs/architecture.md#storage ("Snapshots").
 */
import { createHash } from 'node:crypto';
import { catalog } from '../events/catalog.ts';
import { sessionMachine } from './session-machine.ts';
import type { SessionSnapshot } from './decider.ts';

export interface SnapshotStore {
  /** The latest stored snapshot of a session for this machine version, if any. */
  get(sessionId: string): Promise<SessionSnapshot | undefined>;
  /** Stores a snapshot (replacing an older one of the session). */
  put(snapshot: SessionSnapshot): Promise<void>;
  /** Told when a snapshot it returned failed the check against the log and was discarded (to report and count it). */
  discarded?(sessionId: string, reason: string): void;
}

/** What a store counts. */
export interface SnapshotStoreStats {
  /** Snapshots read that failed the check against the log (forged, or of another log). */
  discarded: number;
}

/** A stored snapshot claiming more pending inputs than this is not checked (one read each) but set aside: the session folds from the log. */
export const MAX_CHECKED_PENDING = 32;

/**
 * The machine version: a hash of the machine's definition (states, transitions, guard and action
 * names) and of the event schema versions. A change to either makes older snapshots stale.
 */
export const MACHINE_VERSION = createHash('sha256')
  .update(JSON.stringify(sessionMachine.config))
  .update(JSON.stringify(Object.fromEntries(Object.entries(catalog).map(([t, e]) => [t, e.version]))))
  .update('context-v11') // the fold's shape: v3 added usage totals, the execution's input ids, a pending input's continuation; v4 the head event and each pending input's admission (what a stored snapshot is checked against); v5 the turn's waits and the waits decided; v6 the session's tags; v7 the source of a fork; v8 who resolved a wait and who cancelled a turn; v9 the session's owner; v10 the execution's turn and trace context, a wait's child, a pending input's traceparent; v11 the session's caller
  .digest('hex')
  .slice(0, 16);

/** Write a snapshot after this many events since the last one (and whenever a turn settles). */
export const DEFAULT_SNAPSHOT_EVERY = 500;
