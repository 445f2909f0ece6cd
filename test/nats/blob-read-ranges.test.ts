// The `blob` command's reads (readBlobChunk) take only their chunk from the store: on NATS (the
// worker user of the shipped nats.conf, counting the bytes its connection receives) and on SQLite
// (counting the bytes the store hands over). Reading a blob chunk by chunk costs about the blob.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { jetstreamManager } from '@nats-io/jetstream';
import type { BlobRange, BlobStore } from '../../src/blobs/blob-store.ts';
import { ManualClock } from '../../src/clock.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { readBlobChunk, type EventReader } from '../../src/nats/blob-commands.ts';
import { MAX_BLOB_READ_BYTES } from '../../src/nats/command-protocol.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { ObjectBlobStore, setupBlobBucket } from '../../src/nats/object-blob-store.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteBlobStore } from '../../src/storage/sqlite/sqlite-blob-store.ts';
import { pseudoRandomBytes } from '../../src/testing/blob-store-contract.ts';
import { ADMIN, WORKER, startNatsServer, type NatsServer } from '../../src/testing/nats-server.ts';
import { tempDir } from '../support/tmp.ts';

const MiB = 1024 * 1024;
const SIZE = 16 * MiB;
const s = suite<{ server: NatsServer }>('blob command reads');

s.before(async (ctx) => {
  ctx.server = await startNatsServer();
  const admin = await connectNats({ servers: ctx.server.url, ...ADMIN });
  try {
    await setupBlobBucket(await jetstreamManager(admin));
  } finally {
    await admin.close();
  }
});
s.after(async (ctx) => {
  await ctx.server.dispose();
});

/** A session whose one event references the blob. */
const referencing =
  (sha256: string, size: number): EventReader =>
  async (_id, { afterSeq }) =>
    afterSeq > 0
      ? []
      : [
          {
            seq: 1,
            type: 'input.admitted',
            payload: { prompt: [{ type: 'file', blob: { sha256, size, mediaType: 'application/octet-stream' } }] },
          } as unknown as SessionEvent,
        ];

async function readAll(store: BlobStore, sha256: string, onChunk: (offset: number) => void = () => undefined): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (let offset = 0; ; ) {
    const r = await readBlobChunk({ sessionId: 'ses_ranges', sha256, offset }, referencing(sha256, SIZE), { store, maxBlobBytes: SIZE, tenant: undefined });
    parts.push(Buffer.from(r.data, 'base64'));
    onChunk(offset);
    offset += parts.at(-1)!.length;
    if (!r.more) return Buffer.concat(parts);
  }
}

s(
  'blob command reads - on NATS the last chunk of a 16 MiB blob takes about a chunk off the wire, and the whole blob in chunks about the blob',
  async ({ server }) => {
    const writer = await connectNats({ servers: server.url, ...WORKER });
    const reader = await connectNats({ servers: server.url, ...WORKER });
    try {
      const bytes = pseudoRandomBytes(SIZE, `command ranges ${process.pid}`);
      const { sha256 } = await (await ObjectBlobStore.open(writer)).put(bytes, { mediaType: 'application/octet-stream' });
      const store = await ObjectBlobStore.open(reader);
      let before = reader.stats().inBytes;
      const offset = SIZE - MAX_BLOB_READ_BYTES;
      const last = await readBlobChunk({ sessionId: 'ses_ranges', sha256, offset }, referencing(sha256, SIZE), {
        store,
        maxBlobBytes: SIZE,
        tenant: undefined,
      });
      assert.ok(Buffer.from(last.data, 'base64').equals(Buffer.from(bytes.subarray(offset))));
      assert.is(last.more, false);
      const took = reader.stats().inBytes - before;
      assert.ok(took < 4 * MAX_BLOB_READ_BYTES, `the last ${MAX_BLOB_READ_BYTES} bytes took ${took} bytes off the wire (the blob is ${SIZE})`);
      before = reader.stats().inBytes;
      const whole = await readAll(store, sha256);
      assert.ok(whole.equals(Buffer.from(bytes)), 'the whole blob, chunk by chunk');
      const all = reader.stats().inBytes - before;
      assert.ok(all < 2 * SIZE, `the whole blob in ${SIZE / MAX_BLOB_READ_BYTES} chunks took ${all} bytes off the wire`);
    } finally {
      await writer.close();
      await reader.close();
    }
  },
);

s('blob command reads - on SQLite each chunk takes only its bytes from the store', async () => {
  const dir = tempDir('sessiond-ranges-');
  const db = openDatabase(dir.file('blobs.db'));
  try {
    migrate(db);
    const inner = new SqliteBlobStore(db, new ManualClock(1_750_000_000_000));
    const bytes = pseudoRandomBytes(SIZE, `sqlite ranges ${process.pid}`);
    const { sha256 } = await inner.put(bytes, { mediaType: 'application/octet-stream' });
    let handed = 0;
    const counting: BlobStore = Object.assign(Object.create(inner) as BlobStore, {
      async *read(hash: string, range?: BlobRange) {
        for await (const piece of inner.read(hash, range)) {
          handed += piece.length;
          yield piece;
        }
      },
    });
    const most: number[] = [];
    const whole = await readAll(counting, sha256, () => {
      most.push(handed);
      handed = 0;
    });
    assert.ok(whole.equals(Buffer.from(bytes)));
    assert.ok(Math.max(...most) <= MAX_BLOB_READ_BYTES, `each chunk took at most ${Math.max(...most)} bytes from the store`);
  } finally {
    db.close();
    dir.remove();
  }
});

s.run();
