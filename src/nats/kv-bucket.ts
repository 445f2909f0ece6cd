/**
 * The small JetStream KV buckets workers share beside the log (model-call limits, tenants'
 * budgets): opened with a clear word when `sessiond setup` has not made them, and made by setup.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { type KV, Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { NotFoundError } from '../errors.ts';
import { DEFAULT_STREAM_WAIT_MS, isStreamNotFound, isWrongLastSequence, untilJetStreamAnswers } from './stream.ts';

/** A compare-and-set write that lost to another writer (read again and retry). */
export const isKvConflict = (err: unknown): boolean =>
  isWrongLastSequence(err) || /wrong last sequence|key exists/i.test(String((err as Error)?.message ?? ''));

/** Opens a bucket `sessiond setup` makes; a deployment set up before it existed is told to run setup. */
export async function openKvBucket(nc: NatsConnection, bucket: string, holds: string): Promise<KV> {
  try {
    const kv = await new Kvm(nc).open(bucket);
    await kv.status();
    return kv;
  } catch (err) {
    throw new NotFoundError(
      `The JetStream KV bucket ${bucket} (${holds}) is missing or not readable: ${(err as Error).message}. It was added after this deployment was set up: run \`sessiond setup --nats <url> --nats-user admin\` once, then start the workers again.`,
      { cause: err },
    );
  }
}

/**
 * `sessiond setup`: creates the bucket (history 1, `replicas` as the event stream's), or leaves an
 * existing one. Asked again while JetStream answers with something that passes (a cluster still
 * forming: "no suitable peers for placement, peer offline"), for up to `waitMs` (default 60 s).
 */
export async function setupKvBucket(
  nc: NatsConnection,
  bucket: string,
  options: { replicas?: number; waitMs?: number } = {},
): Promise<{ created: boolean; replicas: number }> {
  // no account check up front: it would be one request not asked again (the requests below are)
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  return untilJetStreamAnswers(
    `KV_${bucket}`,
    'create',
    async () => {
      try {
        const info = await jsm.streams.info(`KV_${bucket}`);
        return { created: false, replicas: info.config.num_replicas };
      } catch (err) {
        if (!isStreamNotFound(err)) throw err;
        const kv = await new Kvm(nc).create(bucket, { history: 1, replicas: options.replicas ?? 1 });
        return { created: true, replicas: (await kv.status()).replicas };
      }
    },
    options.waitMs ?? DEFAULT_STREAM_WAIT_MS,
  );
}
