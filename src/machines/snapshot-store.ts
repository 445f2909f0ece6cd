/**
 * Where session snapshots are kept between loads (the port), and the version that ties a stored
 * snapshot to the machine definition that folded it.
 *
 * A snapshot is only a cache of what the log says: it is written after the events it covers were
 * committed, read on a cold load, and folded forward with the events that follow it. One whose
 * machine version differs, or that claims a sequence the log does not have, is ignored.
 * Implementations (one contract suite, src/testing/snapshot-store-contract.ts): the SQLite table
 * beside the embedded log (src/storage/sqlite-snapshot-store.ts), and a JetStream stream beside the
 * events stream, shared by every worker (src/nats/snapshot-store.ts).
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
}

/**
 * The machine version: a hash of the machine's definition (states, transitions, guard and action
 * names) and of the event schema versions. A change to either makes older snapshots stale.
 */
export const MACHINE_VERSION = createHash('sha256')
  .update(JSON.stringify(sessionMachine.config))
  .update(JSON.stringify(Object.fromEntries(Object.entries(catalog).map(([t, e]) => [t, e.version]))))
  .update('context-v3') // the fold's shape: v3 added usage totals, the execution's input ids, a pending input's continuation
  .digest('hex').slice(0, 16);

/** Write a snapshot after this many events since the last one (and whenever a turn settles). */
export const DEFAULT_SNAPSHOT_EVERY = 500;
