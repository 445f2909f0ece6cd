/**
 * Nothing left behind on NATS, one nats-server: a worker applying the admin's delete removes the
 * deleted session's objects from the Object Store bucket once they are older than the grace period,
 * keeps one another session still references (until that one goes too), and `sessiond blobs sweep
 * --nats` removes an object no event references (an admission that stopped before its event).
 */
import * as assert from 'uvu/assert';
import { as, cliSuite } from './cli-suite.ts';
import { ADMIN, WORKER } from '../../src/testing/nats-server.ts';
import { runCli } from '../support/cli.ts';
import { pngBytes } from '../support/png.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { ObjectBlobStore } from '../../src/nats/object-blob-store.ts';
import { applyDeletion, deleteNatsSession } from '../../src/nats/delete-session.ts';
import { CommandHandler } from '../../src/execution/command-handler.ts';
import { admitInput } from '../../src/input/admit.ts';
import { Projector } from '../../src/projector/projector.ts';
import { ManualClock, systemClock } from '../../src/clock.ts';
import { sequentialIds } from '../../src/ids.ts';
import { sha256Hex } from '../../src/blobs/blob-store.ts';
import { DEFAULT_BLOB_GRACE_MS, describeBlobSweep, sweepBlobs } from '../../src/blobs/sweep.ts';
import { STAGED_CHUNK_GRACE_MS, grantName, stagedName } from '../../src/blobs/blob-staging.ts';
import { stagedGrants } from '../../src/blobs/blob-grants.ts';
import { DEFAULT_LIMITS } from '../../src/input/limits.ts';

const s = cliSuite('blobs left behind on NATS');

s("deleting removes the session's objects past the grace period; an object another session references stays until it goes too", async (ctx) => {
  const worker = await JetStreamEventLog.open({ connection: { servers: ctx.server.url, ...WORKER }, ensureStream: false });
  const admin = await JetStreamEventLog.open({ connection: { servers: ctx.server.url, ...ADMIN }, ensureStream: false });
  const db = openDatabase(ctx.tmp.file('worker.db'));
  try {
    migrate(db);
    const clock = new ManualClock(systemClock.now());
    const store = await ObjectBlobStore.open(worker.nc, { clock });
    const handler = new CommandHandler(worker, clock, sequentialIds('adm'));
    const image = (seed: number) => [{ type: 'image' as const, data: pngBytes(300_000, seed).toString('base64'), mediaType: 'image/png' }];
    await admitInput(handler, 'ses_own', { prompt: image(1), wake: false }, DEFAULT_LIMITS, undefined, { store });
    await admitInput(handler, 'ses_one', { prompt: image(2), wake: false }, DEFAULT_LIMITS, undefined, { store });
    await admitInput(handler, 'ses_two', { prompt: image(2), wake: false }, DEFAULT_LIMITS, undefined, { store });
    const [own, shared] = [sha256Hex(pngBytes(300_000, 1)), sha256Hex(pngBytes(300_000, 2))];
    const projector = new Projector(db);
    projector.apply(await worker.readAll());
    await clock.advance(DEFAULT_BLOB_GRACE_MS + 1);

    const blobs = { store, clock };
    const del = (id: string) => deleteNatsSession(admin, systemClock, sequentialIds(`del_${id}`), id, { by: 'dpo' });
    assert.ok(await applyDeletion(db, worker, projector, await del('ses_own'), blobs));
    assert.is(await store.has(own), false, "the deleted session's object is gone");
    assert.ok(await applyDeletion(db, worker, projector, await del('ses_one'), blobs));
    assert.is(await store.has(shared), true, 'ses_two still references it');
    assert.ok(await applyDeletion(db, worker, projector, await del('ses_two'), blobs));
    assert.is(await store.has(shared), false, 'the last reference went');
  } finally {
    db.close();
    await worker.close();
    await admin.close();
  }
});

s('sessiond blobs sweep --nats removes an object no event references, past the grace period, and nothing else', async (ctx) => {
  const worker = await JetStreamEventLog.open({ connection: { servers: ctx.server.url, ...WORKER }, ensureStream: false });
  try {
    const store = await ObjectBlobStore.open(worker.nc);
    const handler = new CommandHandler(worker, systemClock, sequentialIds('sw'));
    const kept = pngBytes(200_000, 7);
    await admitInput(
      handler,
      'ses_kept',
      { prompt: [{ type: 'image', data: kept.toString('base64'), mediaType: 'image/png' }], wake: false },
      DEFAULT_LIMITS,
      undefined,
      { store },
    );
    // stored, and its admission never appended (as a crash between the two leaves it)
    const orphan = await store.put(pngBytes(200_000, 8), { mediaType: 'image/png' });
    // as the worker user (what workers sweep as; it may write the bucket)
    const nats = ['--nats', ctx.server.url, ...as(WORKER)];
    const young = await runCli(['blobs', 'sweep', ...nats]);
    assert.is(young.code, 0, young.stdout + young.stderr);
    assert.match(young.stdout, 'removed 0 unreferenced blobs');
    const swept = await runCli(['blobs', 'sweep', '--grace-ms', '0', ...nats]);
    assert.is(swept.code, 0, swept.stdout + swept.stderr);
    assert.match(swept.stdout, `removed blob ${orphan.sha256}`);
    assert.is(await store.has(orphan.sha256), false);
    assert.is(await store.has(sha256Hex(kept)), true, 'the referenced image stays');
  } finally {
    await worker.close();
  }
});

s('the sweep removes the staged chunks of an upload abandoned past their grace period, and old upload grants, and only those', async (ctx) => {
  const worker = await JetStreamEventLog.open({ connection: { servers: ctx.server.url, ...WORKER }, ensureStream: false });
  try {
    const store = await ObjectBlobStore.open(worker.nc);
    const kept = await store.put(pngBytes(1_000, 7), { mediaType: 'image/png' });
    const staged = [stagedName('t-acme', 'abandoned01', 0), stagedName('t-acme', 'abandoned01', 524_288)];
    for (const name of staged) await store.staging.stage(name, new Uint8Array(100).fill(1));
    const grants = stagedGrants(store.staging, systemClock);
    await grants.grant('token:bob', kept.sha256);
    assert.is(await grants.granted('token:bob', kept.sha256), true);
    const references = { referenced: (sha256: string) => sha256 === kept.sha256 };
    const fresh = await sweepBlobs({ store, references, now: Date.now() });
    assert.is(fresh.abandonedChunks, 0, 'chunks staged just now belong to an upload in progress');
    const later = Date.now() + STAGED_CHUNK_GRACE_MS + 60_000;
    const dry = await sweepBlobs({ store, references, now: later, dryRun: true });
    assert.is(dry.abandonedChunks, 2);
    assert.is(dry.expiredGrants, 1);
    assert.match(describeBlobSweep(dry, true), 'would remove 2 chunks of uploads abandoned over 60 min ago');
    assert.match(describeBlobSweep(dry, true), 'would remove 1 expired upload grant');
    const swept = await sweepBlobs({ store, references, now: later });
    assert.is(swept.abandonedChunks, 2);
    assert.is(swept.expiredGrants, 1);
    assert.is(await store.staging.staged(grantName('token:bob', kept.sha256)), undefined, 'the grant removed');
    for (const name of staged) assert.is(await store.staging.staged(name), undefined, `${name} removed`);
    assert.ok(await store.has(kept.sha256), 'a referenced blob stays');
  } finally {
    await worker.close();
  }
});

s.run();
