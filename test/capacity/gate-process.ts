/**
 * A worker process for the capacity tests: `node --import tsx gate-process.ts '<json>'`.
 * Opens a model-call gate on the shared store (a SQLite file, or NATS KV as the worker user) with
 * `{ models: { '*': limit } }`, then:
 *   mode "calls": makes `calls` calls at once, each holding a slot while it POSTs to `modelUrl`
 *                 (the test's model server counts what is in flight), prints `DONE <calls>`, exits;
 *   mode "hold":  takes one slot, prints `HELD`, and stays until killed (no release, no close).
 */
import type { CapacityStore } from '../../src/capacity/store.ts';
import { openModelCallGate } from '../../src/capacity/gate.ts';
import { sqliteCapacityStore } from '../../src/capacity/sqlite-capacity-store.ts';
import { jetstreamCapacityStore } from '../../src/capacity/kv-capacity-store.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { WORKER } from '../../src/testing/nats-server.ts';

interface Args {
  file?: string;
  nats?: string;
  ownerId: string;
  limit: number;
  leaseMs: number;
  mode: 'calls' | 'hold';
  calls?: number;
  modelUrl?: string;
}
const args = JSON.parse(process.argv[2]!) as Args;

async function openStore(): Promise<CapacityStore> {
  if (args.nats) return jetstreamCapacityStore(await connectNats({ servers: args.nats, ...WORKER }));
  const db = openDatabase(args.file!);
  migrate(db);
  return sqliteCapacityStore(db);
}

const store = await openStore();
const gate = await openModelCallGate(store, { ownerId: args.ownerId, limits: { models: { '*': args.limit } }, leaseMs: args.leaseMs, pollMs: 20 });
const never = new AbortController().signal;
const request = (i: number) => ({
  sessionId: `ses_${args.ownerId}_${i}`,
  executionId: `exe_${i}`,
  tenant: null,
  provider: 'http://model.test/v1',
  model: 'fake',
});

if (args.mode === 'hold') {
  await gate.acquire(request(0), never);
  console.log('HELD');
  setInterval(() => {}, 60_000);
} else {
  await Promise.all(
    Array.from({ length: args.calls ?? 1 }, async (_, i) => {
      const slot = await gate.acquire(request(i), never);
      try {
        const res = await fetch(args.modelUrl!, { method: 'POST', body: args.ownerId });
        if (!res.ok) throw new Error(`model server answered ${res.status}`);
      } finally {
        await slot.release();
      }
    }),
  );
  await gate.close();
  console.log(`DONE ${args.calls ?? 1}`);
  process.exit(0);
}
