/**
 * The worker's bound on blob bytes held in memory at once (`maxBlobMemoryBytes`): reservations past
 * it wait their turn, then fail saying what to do; a turn reads each blob once and holds it until
 * it ends; a second turn whose blob does not fit beside the first waits until the first ends.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { BlobMemory } from '../../src/blobs/blob-memory.ts';
import type { BlobRef, BlobStore } from '../../src/blobs/blob-store.ts';
import { ManualClock } from '../../src/clock.ts';
import { openEngine, type Engine } from '../../src/engine.ts';
import { ErrorCode } from '../../src/errors.ts';
import { parseLimits } from '../../src/input/limits.ts';
import type { Runner } from '../../src/runner/types.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteBlobStore } from '../../src/storage/sqlite/sqlite-blob-store.ts';
import { expectCode } from '../../src/testing/fixtures.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { pngBytes } from '../support/png.ts';
import { tempDir } from '../support/tmp.ts';

const s = suite('blob memory');

s('blob memory - a reservation that would pass the limit waits until enough is released, first come first served', async () => {
  const memory = new BlobMemory(100, { clock: new ManualClock() });
  const a = await memory.reserve(60, 'a');
  const order: string[] = [];
  const b = memory.reserve(50, 'b').then((r) => (order.push('b'), r));
  const c = memory.reserve(10, 'c').then((r) => (order.push('c'), r)); // fits, but waits behind b
  await new Promise((r) => setImmediate(r));
  assert.equal(order, [], 'nothing granted past the limit');
  assert.is(memory.held, 60);
  a();
  a(); // twice releases once
  const releaseB = await b;
  await c;
  assert.equal(order, ['b', 'c']);
  assert.is(memory.held, 60);
  releaseB();
  assert.is(memory.held, 10);
});

s('blob memory - a wait that outlasts its deadline fails saying what to do; one larger than the limit fails at once', async () => {
  const clock = new ManualClock();
  const memory = new BlobMemory(100, { clock, waitMs: 5_000 });
  const held = await memory.reserve(80, 'a');
  const waiting = expectCode(memory.reserve(30, 'Blob x'), ErrorCode.Timeout, 'waited 5000 ms for 30 bytes');
  await clock.advance(5_000);
  const err = await waiting;
  assert.match(err.message, '--max-blob-memory-bytes');
  assert.is(memory.held, 80, 'the failed wait holds nothing');
  await expectCode(memory.reserve(101, 'Blob y'), ErrorCode.LimitExceeded, "over the worker's limit of 100 bytes");
  await expectCode(memory.reserve(30, 'Blob z', 80), ErrorCode.LimitExceeded, 'beside the 80 this turn already holds');
  held();
  assert.is(memory.held, 0);
});

s('blob memory - limits: maxBlobBytes over maxBlobMemoryBytes is refused', () => {
  expectCode(() => parseLimits('test', { maxBlobBytes: 2_000_000, maxBlobMemoryBytes: 1_000_000 }), ErrorCode.InvalidOption, 'maxBlobMemoryBytes');
});

/** A blob store that counts its whole reads. */
function counting(inner: BlobStore): BlobStore & { gets: string[] } {
  const gets: string[] = [];
  return Object.assign(Object.create(inner) as BlobStore, {
    gets,
    get: (sha: string) => {
      gets.push(sha);
      return inner.get(sha);
    },
  });
}

s('blob memory - an engine: a turn reads its image once for three model steps, and a second turn waits until the first has let go of its image', async () => {
  const tmp = tempDir('sessiond-blob-memory-');
  const db = openDatabase(tmp.file('blobs.db'));
  migrate(db);
  const store = counting(new SqliteBlobStore(db, new ManualClock()));
  const gates = new Map<string, () => void>();
  const read: string[] = [];
  let most = 0;
  let engine: Engine | undefined;
  const runner: Runner = async (ctx) => {
    const refs = ctx.inputs.flatMap((i) => i.parts ?? []).flatMap((p) => ('blob' in p ? [p.blob as BlobRef] : []));
    for (let step = 0; step < 3; step++)
      for (const ref of refs) {
        await ctx.history(); // a durable write between the steps (the turn keeps its blobs through it)
        const bytes = await ctx.blob(ref);
        assert.is(bytes.length, ref.size);
        most = Math.max(most, engine!.execution.blobMemory.held);
      }
    read.push(ctx.sessionId);
    await new Promise<void>((resolve) => gates.set(ctx.sessionId, resolve));
  };
  engine = await openEngine({
    file: tmp.file('engine.db'),
    runner,
    blobs: store,
    limits: { maxBlobBytes: 200_000, maxPendingBlobBytes: 400_000, maxBlobMemoryBytes: 300_000 },
  });
  const image = (seed: number) => ({ type: 'image' as const, data: pngBytes(180_000, seed).toString('base64'), mediaType: 'image/png' });
  try {
    // admitted first, not run (an admission's put counts too: it would wait for the first turn's room)
    await engine.admit('ses_m2', { prompt: [{ type: 'text', text: 'two' }, image(2)], wake: false });
    await engine.admit('ses_m1', { prompt: [{ type: 'text', text: 'one' }, image(1)] });
    await waitFor(() => read.includes('ses_m1'), { what: 'the first turn to read its image' });
    assert.is(store.gets.length, 1, 'three steps, one read of the store');
    assert.is(engine.execution.blobMemory.held, 180_000, 'the first turn holds its image');
    await engine.wake('ses_m2');
    // the second turn has started (it reserves before it reads) and cannot read beside the first
    await waitFor(() => engine!.execution.blobMemory.queued === 1, { what: 'the second turn to wait for room' });
    assert.equal(read, ['ses_m1']);
    assert.is(store.gets.length, 1, 'the second turn has not read its image');
    gates.get('ses_m1')!();
    await engine.awaitIdle('ses_m1');
    await waitFor(() => read.includes('ses_m2'), { what: 'the second turn to read once the first let go' });
    assert.is(store.gets.length, 2);
    assert.ok(most <= 300_000, `never more than the limit held (most: ${most})`);
    gates.get('ses_m2')!();
    await engine.awaitIdle('ses_m2');
    assert.is(engine.execution.blobMemory.held, 0, 'every turn let go');
  } finally {
    for (const open of gates.values()) open();
    await engine.close();
    db.close();
    tmp.remove();
  }
});

s('blob memory - a turn holding its image stores a long tool result whose room it would otherwise wait for on itself', async () => {
  const tmp = tempDir('sessiond-blob-memory-');
  let engine: Engine | undefined;
  const runner: Runner = async (ctx) => {
    const refs = ctx.inputs.flatMap((i) => i.parts ?? []).flatMap((p) => ('blob' in p ? [p.blob as BlobRef] : []));
    for (const ref of refs) await ctx.blob(ref);
    const { messageId } = await ctx.startStep();
    await ctx.tool(messageId, { name: 'read_log', input: {} }, async () => ({ text: 'y'.repeat(500_000) }));
    for (const ref of refs) await ctx.blob(ref); // the next step reads it again
    await ctx.endStep(messageId);
  };
  engine = await openEngine({
    file: tmp.file('engine.db'),
    runner,
    limits: { maxBlobBytes: 200_000, maxPendingBlobBytes: 600_000, maxBlobMemoryBytes: 600_000 },
  });
  try {
    await engine.admit('ses_t1', {
      prompt: [
        { type: 'text', text: 'read' },
        { type: 'image', data: pngBytes(180_000, 3).toString('base64'), mediaType: 'image/png' },
      ],
    });
    await waitFor(async () => (await engine!.status('ses_t1')).outcome !== null, { what: 'the turn to settle' });
    assert.is((await engine.status('ses_t1')).outcome, 'succeeded');
    const events = await engine.log.readSession('ses_t1');
    assert.ok(
      events.some((e) => e.type === 'tool.succeeded' && 'outputBlob' in e.payload && e.payload.outputBlob !== undefined),
      'the result stored as a blob',
    );
    assert.is(engine.execution.blobMemory.held, 0);
  } finally {
    await engine.close();
    tmp.remove();
  }
});

s.run();
