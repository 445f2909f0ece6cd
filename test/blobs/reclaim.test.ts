/**
 * Nothing left behind, on the embedded log: a delete removes the blobs its session alone referenced,
 * a fork keeps its source's blobs alive until the last reference goes, an admission that re-uses a
 * blob while a delete runs never loses it, and the sweep removes blobs no event references once
 * they are older than the grace period (and nothing else).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock } from '../../src/clock.ts';
import { openEngine, type Engine } from '../../src/engine.ts';
import type { EventLog } from '../../src/events/event-log.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { sha256Hex, type BlobRef } from '../../src/blobs/blob-store.ts';
import { DEFAULT_BLOB_GRACE_MS, blobVerdict, describeBlobSweep } from '../../src/blobs/sweep.ts';
import { sweepProjectedBlobs, missingBlobs } from '../../src/sessions/blob-sweep.ts';
import { sequentialIds } from '../../src/ids.ts';
import { tempDir } from '../support/tmp.ts';
import { expectCode } from '../../src/testing/fixtures.ts';
import { ErrorCode } from '../../src/errors.ts';
import { startWorker } from '../../src/execution/worker.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { pngBytes } from '../support/png.ts';

const T0 = 1_760_000_000_000;
const HOUR = 3_600_000;

type World = { clock: ManualClock; engine: Engine };

async function inWorld(body: (w: World) => Promise<void>, decorateLog?: (log: EventLog, w: () => World) => EventLog): Promise<void> {
  const tmp = tempDir('sessiond-reclaim-');
  const clock = new ManualClock(T0);
  let world: World | undefined;
  const engine = await openEngine({
    file: tmp.file('s.db'),
    runner: echoRunner(),
    clock,
    ids: sequentialIds(),
    ...(decorateLog ? { decorateLog: (log: EventLog) => decorateLog(log, () => world!) } : {}),
  });
  world = { clock, engine };
  try {
    await body(world);
  } finally {
    await engine.close();
    tmp.remove();
  }
}

const image = (seed: number) => pngBytes(200_000, seed);
const refOf = (bytes: Uint8Array): BlobRef => ({ sha256: sha256Hex(bytes), size: bytes.length, mediaType: 'image/png' });

/** Admits a prompt with the image inline (stored as a blob at admission) and runs its turn. */
async function promptWithImage(e: Engine, sessionId: string, bytes: Buffer): Promise<BlobRef> {
  await e.admit(sessionId, {
    prompt: [
      { type: 'text', text: 'what is this?' },
      { type: 'image', data: bytes.toString('base64'), mediaType: 'image/png' },
    ],
  });
  await e.awaitIdle(sessionId);
  return refOf(bytes);
}

const sweep = (e: Engine, now: number, graceMs?: number) => sweepProjectedBlobs(e.db, e.log, e.blobs!, { now, ...(graceMs === undefined ? {} : { graceMs }) });

test('blob reclaim - a delete removes the blobs only its session referenced, once past the grace period', () =>
  inWorld(async ({ clock, engine: e }) => {
    const mine = await promptWithImage(e, 'ses_a', image(1));
    const kept = await promptWithImage(e, 'ses_b', image(2));
    await clock.advance(DEFAULT_BLOB_GRACE_MS + 1);
    const record = await e.delete('ses_a', { by: 'dpo' });
    assert.equal(record.blobs, { removed: 1, shared: 0, left: 0 });
    assert.is(await e.blobs!.has(mine.sha256), false, "the deleted session's image is gone");
    assert.is(await e.blobs!.has(kept.sha256), true, "another session's image stays");
    assert.equal(await missingBlobs(e.db, e.log, e.blobs!), [], 'nothing referenced is missing');
  }));

test('blob reclaim - a fork keeps its source blobs: deleting the source keeps them, deleting the fork too removes them', () =>
  inWorld(async ({ clock, engine: e }) => {
    const ref = await promptWithImage(e, 'ses_src', image(3));
    const fork = await e.fork('ses_src', 'ses_fork');
    assert.ok(fork.created);
    await clock.advance(DEFAULT_BLOB_GRACE_MS + 1);
    assert.equal((await e.delete('ses_src', { by: 'dpo' })).blobs, { removed: 0, shared: 1, left: 0 });
    assert.is(await e.blobs!.has(ref.sha256), true, 'the fork still references it');
    assert.equal(await missingBlobs(e.db, e.log, e.blobs!), []);
    assert.equal((await e.delete('ses_fork', { by: 'dpo' })).blobs, { removed: 1, shared: 0, left: 0 });
    assert.is(await e.blobs!.has(ref.sha256), false, 'the last reference went');
  }));

test('blob reclaim - a blob put within the grace period is left by a delete and removed by a later sweep', () =>
  inWorld(async ({ clock, engine: e }) => {
    const ref = await promptWithImage(e, 'ses_young', image(4));
    assert.equal((await e.delete('ses_young', { by: 'dpo' })).blobs, { removed: 0, shared: 0, left: 1 });
    assert.is(await e.blobs!.has(ref.sha256), true);
    let report = await sweep(e, clock.now());
    assert.equal([report.orphaned.length, report.young.map((b) => b.sha256)], [0, [ref.sha256]]);
    await clock.advance(DEFAULT_BLOB_GRACE_MS + 1);
    report = await sweep(e, clock.now());
    assert.equal(
      report.orphaned.map((b) => b.sha256),
      [ref.sha256],
    );
    assert.is(await e.blobs!.has(ref.sha256), false);
    assert.match(describeBlobSweep(report), 'removed 1 unreferenced blob (200000 bytes)');
  }));

test('blob reclaim - an admission re-using a blob while its only session is deleted keeps it (put, delete, then append)', async () => {
  const shared = image(5);
  let deleted: unknown;
  await inWorld(
    async ({ clock, engine: e }) => {
      await promptWithImage(e, 'ses_old', shared);
      await clock.advance(2 * DEFAULT_BLOB_GRACE_MS);
      // ses_new sends the same bytes: its admission finds the blob stored; the delete of ses_old runs
      // after that put and before the admission's event is appended (the decorated append below)
      await e.admit('ses_new', { prompt: [{ type: 'image', data: shared.toString('base64'), mediaType: 'image/png' }], wake: false });
      assert.equal(deleted, { removed: 0, shared: 0, left: 1 }, 'the delete left the blob: it was put just now');
      assert.ok(Buffer.from(await e.blobs!.get(refOf(shared).sha256)).equals(shared), 'the blob ses_new references is there');
      assert.equal(await missingBlobs(e.db, e.log, e.blobs!), []);
      await clock.advance(2 * DEFAULT_BLOB_GRACE_MS);
      const report = await sweep(e, clock.now());
      assert.equal([report.referenced, report.orphaned.length], [1, 0], 'referenced now: a sweep keeps it');
    },
    (log, world) => {
      const append = log.append.bind(log);
      return Object.assign(Object.create(log) as EventLog, {
        append: async (sessionId: string, expectedSeq: number, drafts: Parameters<EventLog['append']>[2]) => {
          if (sessionId === 'ses_new' && drafts.some((d) => d.type === 'input.admitted') && deleted === undefined) {
            deleted = (await world().engine.delete('ses_old', { by: 'dpo' })).blobs;
          }
          return append(sessionId, expectedSeq, drafts);
        },
      });
    },
  );
});

test('blob reclaim - the sweep removes a blob no event references (an admission that died before its event) past the grace, and nothing else', () =>
  inWorld(async ({ clock, engine: e }) => {
    const referenced = await promptWithImage(e, 'ses_keep', image(6));
    const orphan = await e.blobs!.put(image(7), { mediaType: 'image/png' });
    await clock.advance(HOUR / 2);
    const young = await e.blobs!.put(image(8), { mediaType: 'image/png' });
    let report = await sweep(e, clock.now(), HOUR);
    assert.equal([report.checked, report.referenced, report.orphaned.length, report.young.length], [3, 1, 0, 2], 'nothing past an hour yet');
    await clock.advance(HOUR / 2 + 1);
    report = await sweep(e, clock.now(), HOUR);
    assert.equal(
      report.orphaned.map((b) => b.sha256),
      [orphan.sha256],
    );
    assert.equal(
      report.young.map((b) => b.sha256),
      [young.sha256],
    );
    assert.is(await e.blobs!.has(orphan.sha256), false);
    assert.is(await e.blobs!.has(referenced.sha256), true);
    assert.is(await e.blobs!.has(young.sha256), true);
  }));

test('blob reclaim - the verdict: referenced kept; unreferenced by age', () => {
  const blob = { sha256: 'a'.repeat(64), size: 1, mediaType: 'text/plain', storedAt: 1000 };
  assert.is(blobVerdict(blob, true, 10_000, 100), 'referenced');
  assert.is(blobVerdict(blob, false, 1050, 100), 'young');
  assert.is(blobVerdict(blob, false, 1100, 100), 'young', 'put exactly at the cut: kept');
  assert.is(blobVerdict(blob, false, 1101, 100), 'orphaned');
});

test('blob reclaim - a worker sweeps unreferenced blobs every interval, once past the grace period (injected clock)', () =>
  inWorld(async ({ clock, engine: e }) => {
    const orphan = await e.blobs!.put(image(9), { mediaType: 'image/png' });
    const referenced = await promptWithImage(e, 'ses_ref', image(10));
    const swept: number[] = [];
    const worker = startWorker(e.execution, {
      projection: e.db,
      clock,
      sweep: { intervalMs: HOUR },
      blobSweep: { graceMs: 2 * HOUR, intervalMs: HOUR, onSwept: (r) => swept.push(r.orphaned.length) },
    });
    try {
      await clock.advance(HOUR);
      await waitFor(() => worker.blobSweeper !== undefined && swept.length === 0, { what: 'the first pass' });
      assert.is(await e.blobs!.has(orphan.sha256), true, 'an hour old: within the grace period');
      await clock.advance(2 * HOUR);
      await waitFor(() => swept.length > 0, { what: 'a pass that removed the orphan' });
      assert.equal(swept, [1]);
      assert.is(await e.blobs!.has(orphan.sha256), false);
      assert.is(await e.blobs!.has(referenced.sha256), true);
    } finally {
      await worker.stop();
    }
  }));

test('blob reclaim - an engine with blobGraceMs 0 removes a just-stored blob at delete; a bad value is refused naming it', async () => {
  const tmp = tempDir('sessiond-reclaim-grace-');
  try {
    const clock = new ManualClock(T0);
    const e = await openEngine({ file: tmp.file('g.db'), runner: echoRunner(), clock, blobGraceMs: 0 });
    try {
      const ref = await promptWithImage(e, 'ses_now', image(11));
      await clock.advance(1);
      assert.equal((await e.delete('ses_now', { by: 'dpo' })).blobs, { removed: 1, shared: 0, left: 0 });
      assert.is(await e.blobs!.has(ref.sha256), false);
    } finally {
      await e.close();
    }
    await expectCode(openEngine({ file: tmp.file('bad.db'), runner: echoRunner(), blobGraceMs: -1 }), ErrorCode.InvalidOption, 'engine option blobGraceMs');
  } finally {
    tmp.remove();
  }
});

test.run();
