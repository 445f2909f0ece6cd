/**
 * Session snapshots in stream `SESSIOND_SNAPSHOTS`, the latest per session, shared by every worker:
 * a cache of the log, checked against it before use. Why: docs/nats.md#snapshots.
 */
import {
  jetstream,
  jetstreamManager,
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  type JetStreamClient,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { MACHINE_VERSION, type SnapshotStore, type SnapshotStoreStats } from '../machines/snapshot-store.ts';
import type { SessionSnapshot } from '../machines/decider.ts';
import { validateId } from '../ids.ts';
import { nanos } from '@nats-io/transport-node';
import { DEFAULT_DUPLICATE_WINDOW_MS, manageStream, type StreamSetup } from './stream.ts';

export const SNAPSHOT_STREAM = 'SESSIOND_SNAPSHOTS';
export const SNAPSHOTS_PREFIX = 'sessiond.snapshots';

const snapshotSubject = (sessionId: string) => `${SNAPSHOTS_PREFIX}.${validateId(sessionId, 'session id')}`;

/** The snapshot stream's settings: each one checked by workers and `sessiond setup` (see `manageStream`). */
export function snapshotStreamConfig(replicas = 1): StreamConfig {
  return {
    name: SNAPSHOT_STREAM,
    // exactly its own subjects: a stream that also captured commands or inboxes would store every
    // request and reply for the worker user to read
    subjects: [`${SNAPSHOTS_PREFIX}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    max_msgs_per_subject: 1,
    max_msgs: -1,
    max_bytes: -1,
    max_age: 0,
    max_msg_size: -1,
    max_consumers: -1,
    duplicate_window: nanos(DEFAULT_DUPLICATE_WINDOW_MS),
    num_replicas: replicas,
    // a cache: an operator may purge or delete a snapshot (a forged one, say)
    deny_delete: false,
    deny_purge: false,
    allow_rollup_hdrs: false,
    allow_direct: true,
  } as StreamConfig;
}

/**
 * `sessiond setup` (the admin user): creates the snapshot stream, or brings an existing one to its
 * settings; a cache, so one that differs in what cannot change in place (or in its subjects, which
 * may have captured other messages) is deleted and created again.
 */
export function setupSnapshotStream(
  jsm: JetStreamManager,
  options: { replicas?: number | undefined; newReplicas?: number; serverVersion?: string | undefined } = {},
): Promise<StreamSetup> {
  return manageStream(jsm, snapshotStreamConfig(), { ...options, manage: true, cache: true });
}

export class JetStreamSnapshotStore implements SnapshotStore {
  readonly stats: SnapshotStoreStats = { discarded: 0 };
  private constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly version: string,
    private readonly onDiscarded: (sessionId: string, reason: string) => void,
  ) {}

  /**
   * A snapshot read here failed the check against the log (forged by a holder of the worker
   * password, or of another log): counted and reported. It stays in the stream (workers may not
   * delete messages) until the next snapshot of the session replaces it (max_msgs_per_subject 1).
   */
  discarded(sessionId: string, reason: string): void {
    this.stats.discarded++;
    this.onDiscarded(sessionId, reason);
  }

  /**
   * Opens the store on a connection. The stream is verified, never created or changed (that is
   * `sessiond setup`'s): a missing one is a NotFoundError, one that differs from
   * `snapshotStreamConfig` is refused naming each setting.
   */
  static async open(
    nc: NatsConnection,
    options: { version?: string; onDiscarded?: (sessionId: string, reason: string) => void; waitMs?: number } = {},
  ): Promise<JetStreamSnapshotStore> {
    const jsm = await jetstreamManager(nc);
    // the server's version: a replicated stream is verified as fenced on it (unknown would refuse R3)
    await manageStream(jsm, snapshotStreamConfig(), { serverVersion: nc.info?.version, ...(options.waitMs !== undefined ? { waitMs: options.waitMs } : {}) });
    return new JetStreamSnapshotStore(jetstream(nc), jsm, options.version ?? MACHINE_VERSION, options.onDiscarded ?? (() => undefined));
  }

  async get(sessionId: string): Promise<SessionSnapshot | undefined> {
    const sm = await this.jsm.streams.getMessage(SNAPSHOT_STREAM, { last_by_subj: snapshotSubject(sessionId) });
    if (!sm) return undefined;
    const stored = sm.json<{ machine?: string; snapshot?: SessionSnapshot }>();
    return stored.machine === this.version ? stored.snapshot : undefined;
  }

  async put(snapshot: SessionSnapshot): Promise<void> {
    await this.js.publish(snapshotSubject(snapshot.context.sessionId), JSON.stringify({ machine: this.version, snapshot }));
  }
}
