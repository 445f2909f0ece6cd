/**
 * Tenants' budgets on NATS: a key per tenant (`t_` and the name in base64url) of the JetStream KV
 * bucket `SESSIOND_BUDGETS` (history 1), written with compare-and-set on the revision read and read
 * again on a concurrent write (docs/operating.md#tenants-budgets).
 */
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { isKvConflict, openKvBucket, setupKvBucket } from '../nats/kv-bucket.ts';
import type { TenantBudget } from './tenant.ts';
import { decodeTenantBudget, encodeTenantBudget, type TenantBudgetStore } from './tenant-store.ts';

export const BUDGETS_BUCKET = 'SESSIOND_BUDGETS';
/** Compare-and-set attempts before an update gives up (each one lost a race to another writer). */
const UPDATE_ATTEMPTS = 1_000;

const decoder = new TextDecoder();
const encoder = new TextEncoder();
const keyOf = (tenant: string) => `t_${Buffer.from(tenant, 'utf8').toString('base64url')}`;
const tenantOf = (key: string) => Buffer.from(key.slice(2), 'base64url').toString('utf8');

/** Opens the bucket; a deployment set up before it existed is told to run `sessiond setup`. */
export async function jetstreamTenantBudgetStore(nc: NatsConnection, options: { bucket?: string } = {}): Promise<TenantBudgetStore> {
  const bucket = options.bucket ?? BUDGETS_BUCKET;
  const kv = await openKvBucket(nc, bucket, "tenants' budgets, shared by the workers");
  const where = (tenant: string) => `key ${keyOf(tenant)} (tenant ${tenant}) of the KV bucket ${bucket}`;
  const read = async (tenant: string): Promise<{ budget: TenantBudget | null; revision: number }> => {
    const entry = await kv.get(keyOf(tenant));
    if (!entry || entry.operation !== 'PUT' || entry.value.length === 0) return { budget: null, revision: entry?.revision ?? 0 };
    return { budget: decodeTenantBudget(decoder.decode(entry.value), where(tenant)), revision: entry.revision };
  };
  return {
    read: async (tenant) => (await read(tenant)).budget,
    async list() {
      // the keys from the stream's subject counts: no consumer, which the worker user may not create
      const info = await (await jetstreamManager(nc)).streams.info(`KV_${bucket}`, { subjects_filter: `$KV.${bucket}.>` });
      const tenants = Object.keys(info.state.subjects ?? {})
        .map((subject) => subject.slice(`$KV.${bucket}.`.length))
        .filter((key) => key.startsWith('t_'))
        .map(tenantOf)
        .sort();
      const out = new Map<string, TenantBudget>();
      for (const tenant of tenants) {
        const { budget } = await read(tenant);
        if (budget) out.set(tenant, budget);
      }
      return out;
    },
    async update(tenant, change) {
      for (let attempt = 1; ; attempt++) {
        const before = await read(tenant);
        const after = change(before.budget);
        if (after === before.budget) return after;
        try {
          if (after === null) await kv.delete(keyOf(tenant), { previousSeq: before.revision });
          else if (before.revision === 0) await kv.create(keyOf(tenant), encoder.encode(encodeTenantBudget(after)));
          else await kv.update(keyOf(tenant), encoder.encode(encodeTenantBudget(after)), before.revision);
          return after;
        } catch (err) {
          if (!isKvConflict(err) || attempt >= UPDATE_ATTEMPTS) throw err;
        }
      }
    },
    close: async () => {},
  };
}

/** `sessiond setup`: creates the bucket (history 1, `replicas` as the event stream's), or leaves an existing one. */
export function setupBudgetsBucket(nc: NatsConnection, options: { replicas?: number; bucket?: string } = {}): Promise<{ created: boolean; replicas: number }> {
  return setupKvBucket(nc, options.bucket ?? BUDGETS_BUCKET, options);
}
