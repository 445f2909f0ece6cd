/**
 * The capacity state on NATS: key `state` of the JetStream KV bucket `SESSIOND_CAPACITY` (history 1),
 * shared by every worker and created by `sessiond setup`. An update writes back with compare-and-set
 * on the revision it read and retries on a concurrent write, so no worker's change is lost.
 */
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { isKvConflict, openKvBucket, setupKvBucket } from '../nats/kv-bucket.ts';
import type { CapacityState } from './decide.ts';
import { type CapacityStore, decodeCapacityState, encodeCapacityState } from './store.ts';

export const CAPACITY_BUCKET = 'SESSIOND_CAPACITY';
export const CAPACITY_KEY = 'state';
/** Compare-and-set attempts before an update gives up (each one lost a race to another writer). */
export const CAPACITY_UPDATE_ATTEMPTS = 1_000;

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** Opens the bucket; a deployment set up before it existed is told to run `sessiond setup`. */
export async function jetstreamCapacityStore(nc: NatsConnection, options: { bucket?: string } = {}): Promise<CapacityStore> {
  const bucket = options.bucket ?? CAPACITY_BUCKET;
  const kv: KV = await openKvBucket(nc, bucket, 'model-call limits shared by the workers');
  const where = `key ${CAPACITY_KEY} of the KV bucket ${bucket}`;
  const read = async (): Promise<{ state: CapacityState; revision: number; text: string }> => {
    const entry = await kv.get(CAPACITY_KEY);
    if (!entry || entry.operation !== 'PUT' || entry.value.length === 0)
      return { state: decodeCapacityState(undefined, where), revision: entry?.revision ?? 0, text: '' };
    const text = decoder.decode(entry.value);
    return { state: decodeCapacityState(text, where), revision: entry.revision, text };
  };
  return {
    read: async () => (await read()).state,
    async update<T>(change: (state: CapacityState) => { state: CapacityState; result: T }): Promise<T> {
      for (let attempt = 1; ; attempt++) {
        const before = await read();
        const out = change(before.state);
        const text = encodeCapacityState(out.state);
        if (text === encodeCapacityState(before.state)) return out.result;
        try {
          if (before.revision === 0) await kv.create(CAPACITY_KEY, encoder.encode(text));
          else await kv.update(CAPACITY_KEY, encoder.encode(text), before.revision);
          return out.result;
        } catch (err) {
          if (!isKvConflict(err) || attempt >= CAPACITY_UPDATE_ATTEMPTS) throw err;
        }
      }
    },
    close: async () => {},
  };
}

/** `sessiond setup`: creates the bucket (history 1, `replicas` as the event stream's), or leaves an existing one. */
export function setupCapacityBucket(nc: NatsConnection, options: { replicas?: number; bucket?: string } = {}): Promise<{ created: boolean; replicas: number }> {
  return setupKvBucket(nc, options.bucket ?? CAPACITY_BUCKET, options);
}
