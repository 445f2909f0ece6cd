/**
 * Stored snapshots of a JetStream log for `verifyLog`: the last message of each session's subject
 * on the snapshot stream, whatever machine version wrote it (`JetStreamSnapshotStore.get` hides
 * other versions). A user that may not read the stream (nats.conf's client) or a server without it
 * gets one note, and the snapshots are not compared.
 */
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { messageOf } from '../errors.ts';
import { SNAPSHOT_STREAM, SNAPSHOTS_PREFIX } from '../nats/snapshot-store.ts';
import type { StoredSnapshot } from './stored-log.ts';

export function jetStreamSnapshots(nc: NatsConnection, notes: string[]): (sessionId: string) => Promise<StoredSnapshot | undefined> {
  let jsm: Promise<JetStreamManager> | undefined;
  let off = false;
  return async (sessionId) => {
    if (off) return undefined;
    try {
      jsm ??= jetstreamManager(nc);
      const sm = await (await jsm).streams.getMessage(SNAPSHOT_STREAM, { last_by_subj: `${SNAPSHOTS_PREFIX}.${sessionId}` });
      if (!sm) return undefined;
      let stored: { machine?: unknown; snapshot?: { context?: { seq?: unknown } } } | undefined;
      try {
        stored = sm.json();
      } catch {
        return { seq: 0, machine: '', data: undefined }; // not JSON: the current code folds the session from the log
      }
      const seq = stored?.snapshot?.context?.seq;
      return { seq: typeof seq === 'number' ? seq : 0, machine: typeof stored?.machine === 'string' ? stored.machine : '', data: stored?.snapshot };
    } catch (err) {
      off = true;
      notes.push(
        `stored snapshots were not compared: the snapshot stream ${SNAPSHOT_STREAM} could not be read (${messageOf(err)}); the worker user of nats.conf may read it`,
      );
      return undefined;
    }
  };
}
