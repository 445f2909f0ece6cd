// The BlobStore contract through MeteredBlobStore (the store a worker's engine uses: its puts count
// against the bound on blob bytes held), and what it adds: a put holds its bytes' room while it runs
// and gives it back when it ends, stored or refused.
import * as assert from 'uvu/assert';
import { BlobMemory } from '../../src/blobs/blob-memory.ts';
import { MeteredBlobStore } from '../../src/blobs/metered-blob-store.ts';
import { ManualClock } from '../../src/clock.ts';
import { ErrorCode } from '../../src/errors.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteBlobStore } from '../../src/storage/sqlite/sqlite-blob-store.ts';
import { blobStoreContract } from '../../src/testing/blob-store-contract.ts';
import { expectCode } from '../../src/testing/fixtures.ts';
import { tempDir } from '../support/tmp.ts';

function fresh(limit: number) {
  const dir = tempDir('sessiond-metered-');
  const db = openDatabase(dir.file('blobs.db'));
  migrate(db);
  const memory = new BlobMemory(limit, { clock: new ManualClock(), waitMs: 1_000 });
  const clock = new ManualClock(1_750_000_000_000);
  return {
    memory,
    clock,
    store: new MeteredBlobStore(new SqliteBlobStore(db, clock), memory),
    cleanup: async () => {
      db.close();
      dir.remove();
    },
  };
}

const contract = blobStoreContract('metered (sqlite)', async () => fresh(256 * 1024 * 1024));

contract('metered - a put holds its bytes while it runs and releases them, stored or refused; chunks count as they are read', async () => {
  const { memory, store, cleanup } = fresh(1_000);
  try {
    let heldDuring = 0;
    async function* chunks() {
      yield new Uint8Array(300).fill(1);
      yield new Uint8Array(300).fill(2);
      heldDuring = memory.held;
    }
    await store.put(chunks(), { mediaType: 'application/octet-stream' });
    assert.is(heldDuring, 600, 'both chunks counted while the put reads');
    assert.is(memory.held, 0, 'released once stored');
    await expectCode(store.put(new Uint8Array(2_000), { mediaType: 'application/octet-stream' }), ErrorCode.LimitExceeded, "worker's limit of 1000 bytes");
    await expectCode(store.put(new Uint8Array(500).fill(3), { mediaType: 'image/png' }), ErrorCode.InvalidPayload);
    assert.is(memory.held, 0, 'a refused put holds nothing');
  } finally {
    await cleanup();
  }
});

contract.run();
