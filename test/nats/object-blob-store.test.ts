// The BlobStore contract on a JetStream Object Store bucket (SESSIOND_BLOBS), as the worker user of
// the shipped nats.conf on a real nats-server; the bucket made as `sessiond setup` makes it (admin).
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import { ManualClock } from '../../src/clock.ts';
import { ErrorCode } from '../../src/errors.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { BLOB_BUCKET, ObjectBlobStore, setupBlobBucket } from '../../src/nats/object-blob-store.ts';
import { blobStoreContract, pseudoRandomBytes } from '../../src/testing/blob-store-contract.ts';
import { expectCode } from '../../src/testing/fixtures.ts';
import { ADMIN, CLIENT, WORKER, startNatsServer, type NatsServer } from '../../src/testing/nats-server.ts';

let server: NatsServer | undefined;
const text = (s: string) => new TextEncoder().encode(s);
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

async function setupBucket(): Promise<void> {
  const admin = await connectNats({ servers: server!.url, ...ADMIN });
  try {
    await setupBlobBucket(await jetstreamManager(admin));
  } finally {
    await admin.close();
  }
}

const contract = blobStoreContract('nats object store', async () => {
  if (!server) {
    server = await startNatsServer();
    await setupBucket();
  }
  const nc = await connectNats({ servers: server.url, ...WORKER });
  const clock = new ManualClock(Date.now());
  return { store: await ObjectBlobStore.open(nc, { clock }), clock, cleanup: () => nc.close() };
});

contract('object blob store - the test harness makes the bucket; a worker opening a deployment set up before it is told to run sessiond setup', async () => {
  const fresh = await startNatsServer();
  const nc = await connectNats({ servers: fresh.url, ...WORKER });
  const admin = await connectNats({ servers: fresh.url, ...ADMIN });
  try {
    // setupStreams made it, as `sessiond setup` does
    await ObjectBlobStore.open(nc, { waitMs: 2_000 });
    await (await jetstreamManager(admin)).streams.delete(`OBJ_${BLOB_BUCKET}`);
    await expectCode(ObjectBlobStore.open(nc, { waitMs: 2_000 }), ErrorCode.NotFound, 'sessiond setup');
  } finally {
    await nc.close();
    await admin.close();
    await fresh.dispose();
  }
});

contract('object blob store - an object whose bytes do not hash to its name is refused on read as corrupt; putting the real bytes replaces it', async () => {
  const nc = await connectNats({ servers: server!.url, ...WORKER });
  try {
    const store = await ObjectBlobStore.open(nc);
    const real = text(`the real bytes ${process.pid}`);
    // written behind the store's back (any holder of the worker password could)
    const os = await new Objm(nc).open(BLOB_BUCKET);
    await os.putBlob({ name: sha(real), metadata: { mediaType: 'text/plain' } }, text('forged bytes'));
    await expectCode(store.get(sha(real)), ErrorCode.DecodeFailed, sha(real));
    assert.equal(await store.put(real, { mediaType: 'text/plain' }), { sha256: sha(real), size: real.length, mediaType: 'text/plain' });
    assert.ok(Buffer.from(await store.get(sha(real))).equals(Buffer.from(real)));
  } finally {
    await nc.close();
  }
});

contract('object blob store - setup is idempotent and keeps the replicas; a client user may not open the bucket (nats.conf)', async () => {
  const admin = await connectNats({ servers: server!.url, ...ADMIN });
  const client = await connectNats({ servers: server!.url, ...CLIENT });
  try {
    const again = await setupBlobBucket(await jetstreamManager(admin));
    assert.is(again.created, false);
    assert.equal(again.changed, []);
    assert.is(again.info.config.num_replicas, 1);
    await expectCode(ObjectBlobStore.open(client, { waitMs: 2_000 }), ErrorCode.InvalidOption);
  } finally {
    await admin.close();
    await client.close();
  }
});

/** Chunk messages in the bucket's stream, and the chunks its live objects name: equal when nothing is left behind. */
async function chunkCounts(nc: Awaited<ReturnType<typeof connectNats>>): Promise<{ stored: number; named: number }> {
  const info = await (await jetstreamManager(nc)).streams.info(`OBJ_${BLOB_BUCKET}`, { subjects_filter: `$O.${BLOB_BUCKET}.C.>` });
  const stored = Object.values(info.state.subjects ?? {}).reduce((n, c) => n + c, 0);
  const named = (await (await new Objm(nc).open(BLOB_BUCKET)).list()).filter((o) => !o.deleted).reduce((n, o) => n + o.chunks, 0);
  return { stored, named };
}

contract('object blob store - refused puts, racing puts of one content and deletes leave no chunk behind', async () => {
  const nc = await connectNats({ servers: server!.url, ...WORKER });
  try {
    const store = await ObjectBlobStore.open(nc);
    const before = await chunkCounts(nc);
    assert.is(before.stored, before.named, 'nothing left behind by the tests before');
    const big = new Uint8Array(3 * 1024 * 1024).map((_, i) => (i * 7919 + process.pid) % 251);
    async function* chunks(bytes: Uint8Array, size = 100_000): AsyncIterable<Uint8Array> {
      for (let at = 0; at < bytes.length; at += size) yield bytes.slice(at, at + size);
    }
    const other = sha(text('other'));
    // refused after chunks were written: the hash at the end, the limit part-way
    await expectCode(store.put(chunks(big), { mediaType: 'application/octet-stream', expectedSha256: other }), ErrorCode.InvalidPayload);
    await expectCode(
      store.put(chunks(big), { mediaType: 'application/octet-stream', expectedSha256: sha(big), maxBytes: 2_000_000 }),
      ErrorCode.PayloadTooLarge,
    );
    // eight puts of one new content at once, streamed with its hash
    const refs = await Promise.all(
      Array.from({ length: 8 }, () => store.put(chunks(big), { mediaType: 'application/octet-stream', expectedSha256: sha(big) })),
    );
    assert.equal(new Set(refs.map((r) => r.sha256)), new Set([sha(big)]));
    let after = await chunkCounts(nc);
    assert.is(after.stored, after.named, `chunks stored ${after.stored}, named by objects ${after.named}`);
    assert.is(after.stored - before.stored, Math.ceil(big.length / 262_144), 'one copy of the content');
    await store.delete(sha(big));
    after = await chunkCounts(nc);
    assert.equal(after, before, 'deleted: its chunks are gone');
  } finally {
    await nc.close();
  }
});

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const c of chunks) parts.push(c);
  return Buffer.concat(parts);
}

contract(
  'object blob store - a ranged read transfers about the bytes it reads: the end of a 16 MiB blob is not the whole, and a read in 512 KiB chunks not O(n^2)',
  async () => {
    const MiB = 1024 * 1024;
    const writer = await connectNats({ servers: server!.url, ...WORKER });
    const reader = await connectNats({ servers: server!.url, ...WORKER });
    try {
      const bytes = pseudoRandomBytes(16 * MiB, `ranged ${process.pid}`);
      const { sha256 } = await (await ObjectBlobStore.open(writer)).put(bytes, { mediaType: 'application/octet-stream' });
      const store = await ObjectBlobStore.open(reader);
      const received = () => reader.stats().inBytes;
      let before = received();
      const last = await collect(store.read(sha256, { offset: 16 * MiB - 512 * 1024 }));
      assert.ok(last.equals(Buffer.from(bytes.subarray(16 * MiB - 512 * 1024))), 'the last 512 KiB');
      const first = received() - before;
      assert.ok(first < 2 * MiB, `the last 512 KiB (its index made on the way) took ${first} bytes off the wire, not the blob's ${16 * MiB}`);
      before = received();
      await collect(store.read(sha256, { offset: 5 * MiB + 1000, length: 1000 }));
      const small = received() - before;
      assert.ok(small < 600 * 1024, `1000 bytes from the middle, the index kept, took ${small} bytes (at most two chunks of 256 KiB)`);
      before = received();
      const parts: Buffer[] = [];
      for (let at = 0; at < bytes.length; at += 512 * 1024) parts.push(await collect(store.read(sha256, { offset: at, length: 512 * 1024 })));
      assert.ok(Buffer.concat(parts).equals(Buffer.from(bytes)), 'chunk after chunk, the whole blob');
      const all = received() - before;
      assert.ok(all < 2 * bytes.length, `the whole blob in 32 ranged reads took ${all} bytes (about the blob, ${bytes.length})`);
    } finally {
      await writer.close();
      await reader.close();
    }
  },
);

contract('object blob store - a ranged read after another worker deleted the blob is not found; after it was stored again, the new copy is read', async () => {
  const [a, b] = [await connectNats({ servers: server!.url, ...WORKER }), await connectNats({ servers: server!.url, ...WORKER })];
  try {
    const [reader, other] = [await ObjectBlobStore.open(a), await ObjectBlobStore.open(b)];
    const bytes = pseudoRandomBytes(1_000_000, `replaced ${process.pid}`);
    const { sha256 } = await other.put(bytes, { mediaType: 'application/octet-stream' });
    const range = { offset: 300_000, length: 400_000 };
    const want = Buffer.from(bytes.subarray(300_000, 700_000));
    assert.ok((await collect(reader.read(sha256, range))).equals(want), 'read (and indexed)');
    await other.delete(sha256);
    await expectCode(collect(reader.read(sha256, range)), ErrorCode.NotFound, sha256);
    await other.put(bytes, { mediaType: 'application/octet-stream' });
    assert.ok((await collect(reader.read(sha256, range))).equals(want), 'the new copy (new chunks) read');
    // chunks purged behind the index's back (meta as it was): the read finds the chunks gone and says not found
    const admin = await connectNats({ servers: server!.url, ...ADMIN });
    try {
      const nuid = (await (await new Objm(admin).open(BLOB_BUCKET)).info(sha256))!.nuid;
      await (await jetstreamManager(admin)).streams.purge(`OBJ_${BLOB_BUCKET}`, { filter: `$O.${BLOB_BUCKET}.C.${nuid}` });
    } finally {
      await admin.close();
    }
    await expectCode(collect(reader.read(sha256, range)), ErrorCode.DecodeFailed, 'chunks');
  } finally {
    await a.close();
    await b.close();
  }
});

contract.after(async () => {
  await server?.dispose();
});

contract.run();
