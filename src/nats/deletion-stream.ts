/**
 * The audit of deletions on NATS: stream `SESSIOND_AUDIT`, subject `sessiond.audit.deleted`, a JSON
 * message per deleted session (who, when, why, how many events, never the content). Only the admin
 * writes it, workers read it to drop the session's rows, nobody deletes or purges it; `sessiond
 * setup` creates it (docs/nats.md#deleting-a-session).
 */
import {
  DeliverPolicy,
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  jetstream,
  type ConsumerMessages,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, SessiondError, messageOf } from '../errors.ts';
import type { DeletionRecord } from '../storage/sqlite/delete-session.ts';
import { DEFAULT_DUPLICATE_WINDOW_MS, manageStream, type StreamSetup } from './stream.ts';
import { endUnread } from './consumer-messages.ts';

export const AUDIT_STREAM = 'SESSIOND_AUDIT';
export const AUDIT_PREFIX = 'sessiond.audit';
export const AUDIT_DELETED = `${AUDIT_PREFIX}.deleted`;

/** A deletion on NATS: the audit record, the events stream it was purged from and its last sequence then. */
export interface NatsDeletionRecord extends DeletionRecord {
  /** The events stream's last sequence when the session was purged: every event of it is at or below. */
  headPosition: number;
  stream: string;
  /** Messages purged from the events stream (one per append). */
  messages: number;
}

export function auditStreamConfig(replicas = 1): StreamConfig {
  return {
    name: AUDIT_STREAM,
    subjects: [`${AUDIT_PREFIX}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    max_msgs_per_subject: -1,
    max_msgs: -1,
    max_bytes: -1,
    max_age: 0,
    max_msg_size: -1,
    max_consumers: -1,
    duplicate_window: nanos(DEFAULT_DUPLICATE_WINDOW_MS),
    num_replicas: replicas,
    // the record of what was erased is kept: nobody removes it through the API
    deny_delete: true,
    deny_purge: true,
    allow_rollup_hdrs: false,
  } as StreamConfig;
}

/** `sessiond setup`: creates the audit stream or brings it to its settings (it is not a cache: what cannot change in place is refused). */
export function setupAuditStream(
  jsm: JetStreamManager,
  options: { replicas?: number | undefined; newReplicas?: number; serverVersion?: string | undefined } = {},
): Promise<StreamSetup> {
  return manageStream(jsm, auditStreamConfig(), { ...options, manage: true });
}

/** Verifies the audit stream (a worker, the admin before a delete): refused when missing or different, saying to run setup. */
export async function verifyAuditStream(jsm: JetStreamManager, serverVersion?: string): Promise<void> {
  await manageStream(jsm, auditStreamConfig(), { serverVersion });
}

/** Records a deletion (the admin user only, by nats.conf); the same deletion sent twice is stored once. */
export async function publishDeletion(nc: NatsConnection, record: NatsDeletionRecord): Promise<void> {
  await jetstream(nc).publish(AUDIT_DELETED, JSON.stringify(record), { msgID: `deleted:${record.sessionId}@${record.headPosition}` });
}

function parseDeletion(data: unknown, seq: number): NatsDeletionRecord {
  const r = data as Partial<NatsDeletionRecord> | null;
  const whole = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 0;
  if (
    !r ||
    typeof r !== 'object' ||
    typeof r.sessionId !== 'string' ||
    typeof r.deletedBy !== 'string' ||
    !whole(r.deletedAt) ||
    !whole(r.events) ||
    !whole(r.lastSeq) ||
    !whole(r.headPosition) ||
    !whole(r.messages)
  ) {
    throw new SessiondError(ErrorCode.DecodeFailed, `Message ${seq} of stream ${AUDIT_STREAM} is not a sessiond deletion record.`, { details: { seq } });
  }
  return {
    sessionId: r.sessionId,
    deletedAt: r.deletedAt!,
    deletedBy: r.deletedBy,
    reason: typeof r.reason === 'string' ? r.reason : null,
    events: r.events!,
    lastSeq: r.lastSeq!,
    archivedTo: typeof r.archivedTo === 'string' ? r.archivedTo : null,
    headPosition: r.headPosition!,
    stream: typeof r.stream === 'string' ? r.stream : '',
    messages: r.messages!,
  };
}

export interface DeletionFollower {
  /** The audit stream sequence handled so far. */
  readonly position: number;
  close(): Promise<void>;
}

/**
 * Reads the deletions from audit stream sequence `after` + 1 on, each handed to `onDeletion` in
 * order (awaited), through one ordered consumer (recreated by the client after a reconnect).
 * `caughtUp` resolves once every deletion stored when it started was handled. A record that is not
 * a deletion (only the admin can write here) goes to `onError` and is passed over.
 */
export function followDeletions(
  nc: NatsConnection,
  options: {
    after?: number;
    onDeletion: (record: NatsDeletionRecord, seq: number) => Promise<void> | void;
    onError?: (err: unknown) => void;
  },
): DeletionFollower & { caughtUp: Promise<void> } {
  let position = options.after ?? 0;
  let messages: ConsumerMessages | undefined;
  let closed = false;
  let markCaughtUp = () => {};
  let failCaughtUp: (err: unknown) => void = () => {};
  const caughtUp = new Promise<void>((resolve, reject) => {
    markCaughtUp = resolve;
    failCaughtUp = reject;
  });
  const run = async () => {
    const consumer = await jetstream(nc).consumers.get(AUDIT_STREAM, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: position + 1 });
    const pending = (await consumer.info(true)).num_pending;
    if (pending === 0) markCaughtUp();
    if (closed) return;
    messages = await consumer.consume({ max_messages: 64 });
    // closed while the consumer was being made (`caughtUp` resolved before): its close saw none to end
    if (closed) return endUnread(messages);
    for await (const m of messages) {
      try {
        await options.onDeletion(parseDeletion(m.json(), m.seq), m.seq);
      } catch (err) {
        options.onError?.(err);
      }
      position = m.seq;
      if (m.info.pending === 0) markCaughtUp();
    }
  };
  const done = run().catch((err: unknown) => {
    if (closed) return;
    failCaughtUp(err);
    options.onError?.(new SessiondError(ErrorCode.LogClosed, `Following stream ${AUDIT_STREAM} stopped: ${messageOf(err)}`, { cause: err }));
  });
  return {
    caughtUp,
    get position() {
      return position;
    },
    async close() {
      closed = true;
      await messages?.close();
      await done;
    },
  };
}

/** Every deletion recorded, oldest first. */
export async function readDeletions(nc: NatsConnection): Promise<NatsDeletionRecord[]> {
  const out: NatsDeletionRecord[] = [];
  const consumer = await jetstream(nc).consumers.get(AUDIT_STREAM, { deliver_policy: DeliverPolicy.All });
  try {
    if ((await consumer.info(true)).num_pending === 0) return out;
    const messages = await consumer.consume({ max_messages: 256 });
    try {
      for await (const m of messages) {
        out.push(parseDeletion(m.json(), m.seq));
        if (m.info.pending === 0) break;
      }
    } finally {
      await messages.close();
    }
    return out;
  } finally {
    await consumer.delete().catch(() => undefined);
  }
}

/**
 * The deletions as the inspector takes them (its `deletions` option): every one recorded, then each
 * new one, until closed. A stream it cannot read (not set up, or a nats.conf older than the
 * observer's right to read it) goes to `onError` once; the inspector goes on without.
 */
export function deletionFeed(nc: NatsConnection, onError: (err: unknown) => void) {
  return (deleted: (sessionId: string, headPosition: number) => Promise<void>) => {
    const follower = followDeletions(nc, { onDeletion: (d) => deleted(d.sessionId, d.headPosition), onError });
    follower.caughtUp.catch(() => undefined); // its failure went to onError
    return { close: () => follower.close() };
  };
}
