/**
 * Session snapshots beside the events stream, shared by every worker: stream `SESSIOND_SNAPSHOTS`,
 * one subject per session (`sessiond.snapshots.<session>`), only its latest message kept
 * (max_msgs_per_subject 1), read with a direct get of the subject's last message. A worker that
 * never saw a session (a restart, another node) cold-loads it from here and folds only what follows.
 *
 * The message is JSON `{ machine, snapshot }`: a snapshot of another machine version reads as none.
 * It is a cache of the log: losing the stream loses nothing (loads fold more), so it keeps file
 * storage without deny_delete, and a worker that may not create it works on without snapshots.
 */
import { jetstream, jetstreamManager, DiscardPolicy, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { MACHINE_VERSION, type SnapshotStore } from '../machines/snapshot-store.ts';
import type { SessionSnapshot } from '../machines/decider.ts';
import { validateId } from '../ids.ts';
import { isJsError, isStreamNotFound, JsErrorCode } from './stream.ts';

export const SNAPSHOT_STREAM = 'SESSIOND_SNAPSHOTS';
export const SNAPSHOTS_PREFIX = 'sessiond.snapshots';

const snapshotSubject = (sessionId: string) => `${SNAPSHOTS_PREFIX}.${validateId(sessionId, 'session id')}`;

export function snapshotStreamConfig(replicas = 1): StreamConfig {
  return {
    name: SNAPSHOT_STREAM,
    subjects: [`${SNAPSHOTS_PREFIX}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    max_msgs_per_subject: 1,
    num_replicas: replicas,
    allow_direct: true,
  } as StreamConfig;
}

/** Creates the snapshot stream with `replicas`, or brings an existing one to them (`sessiond setup`, as the admin user). */
export async function ensureSnapshotStream(jsm: JetStreamManager, replicas: number): Promise<void> {
  try {
    const info = await jsm.streams.info(SNAPSHOT_STREAM);
    if (info.config.num_replicas !== replicas) await jsm.streams.update(SNAPSHOT_STREAM, { ...info.config, num_replicas: replicas });
  } catch (err) {
    if (!isStreamNotFound(err)) throw err;
    await jsm.streams.add(snapshotStreamConfig(replicas));
  }
}

export class JetStreamSnapshotStore implements SnapshotStore {
  private constructor(private readonly js: JetStreamClient, private readonly jsm: JetStreamManager, private readonly version: string) {}

  /** Opens the store on a connection, creating the stream when it is missing. */
  static async open(nc: NatsConnection, options: { replicas?: number; version?: string } = {}): Promise<JetStreamSnapshotStore> {
    const jsm = await jetstreamManager(nc);
    try {
      await jsm.streams.info(SNAPSHOT_STREAM);
    } catch (err) {
      if (!isStreamNotFound(err)) throw err;
      await jsm.streams.add(snapshotStreamConfig(options.replicas)).catch((e: unknown) => {
        if (!isJsError(e, JsErrorCode.StreamNameExist)) throw e; // another worker created it first
      });
    }
    return new JetStreamSnapshotStore(jetstream(nc), jsm, options.version ?? MACHINE_VERSION);
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
