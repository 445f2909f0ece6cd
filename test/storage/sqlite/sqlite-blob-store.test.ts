// The BlobStore contract on the SQLite table `blob` (migration 018), and what only SQLite offers:
// a blob written in the caller's transaction commits or rolls back with it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { ManualClock } from '../../../src/clock.ts';
import { ErrorCode } from '../../../src/errors.ts';
import { openDatabase, type Db } from '../../../src/storage/sqlite/database.ts';
import { migrate } from '../../../src/storage/sqlite/migrate.ts';
import { SqliteBlobStore } from '../../../src/storage/sqlite/sqlite-blob-store.ts';
import { blobStoreContract } from '../../../src/testing/blob-store-contract.ts';
import { expectCode } from '../../../src/testing/fixtures.ts';
import { tempDir } from '../../support/tmp.ts';

const NOW = 1_750_000_000_000;
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const text = (s: string) => new TextEncoder().encode(s);

function fresh(): { db: Db; store: SqliteBlobStore; clock: ManualClock; remove: () => void } {
  const dir = tempDir('sessiond-blobs-');
  const db = openDatabase(dir.file('blobs.db'));
  migrate(db);
  const clock = new ManualClock(NOW);
  return {
    db,
    store: new SqliteBlobStore(db, clock),
    clock,
    remove: () => {
      db.close();
      dir.remove();
    },
  };
}

blobStoreContract('sqlite', async () => {
  const world = fresh();
  return { store: world.store, clock: world.clock, cleanup: async () => world.remove() };
}).run();

test('sqlite blob store - putSync inside a transaction commits with it, and rolls back with it', () => {
  const { db, store, remove } = fresh();
  try {
    const kept = text('kept with its append');
    const dropped = text('dropped with its append');
    db.transaction(() => {
      store.putSync(kept, { mediaType: 'text/plain' });
      db.prepare("INSERT INTO tenant_budgets (tenant, budget, time_updated) VALUES ('t', '{}', 1)").run();
    })();
    assert.throws(
      () =>
        db.transaction(() => {
          store.putSync(dropped, { mediaType: 'text/plain' });
          throw new Error('the append failed');
        })(),
      /the append failed/,
    );
    const rows = db.prepare('SELECT sha256, size, media_type, time_created FROM blob').all();
    assert.equal(rows, [{ sha256: sha(kept), size: kept.length, media_type: 'text/plain', time_created: NOW }]);
    // and the transaction is not left open by a refused blob
    assert.throws(() => db.transaction(() => store.putSync(text('x'), { mediaType: 'text/plain', expectedSha256: sha(kept) }))(), /hash to/);
    assert.is(db.inTransaction, false);
  } finally {
    remove();
  }
});

test('sqlite blob store - bytes changed in the file after they were stored are refused on read as corrupt, naming the blob', async () => {
  const { db, store, remove } = fresh();
  try {
    const ref = await store.put(text('the original'), { mediaType: 'text/plain' });
    const forged = text('a forgery!!!');
    db.prepare('UPDATE blob SET data = ?, size = ? WHERE sha256 = ?').run(forged, forged.length, ref.sha256);
    await expectCode(store.get(ref.sha256), ErrorCode.DecodeFailed, `Blob ${ref.sha256}`);
  } finally {
    remove();
  }
});

test('sqlite blob store - list pages through more blobs than one page holds, each once', async () => {
  const { store, remove } = fresh();
  try {
    const want = new Set<string>();
    for (let i = 0; i < 1_234; i++) want.add((await store.put(text(`blob ${i}`), { mediaType: 'text/plain' })).sha256);
    const seen: string[] = [];
    for await (const b of store.list()) seen.push(b.sha256);
    assert.is(seen.length, 1_234);
    assert.equal(new Set(seen), want);
  } finally {
    remove();
  }
});

test.run();
