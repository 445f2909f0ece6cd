// `sessiond setup` makes the blob bucket (Object Store SESSIOND_BLOBS, stream OBJ_SESSIOND_BLOBS) beside
// the streams, with the events stream's replicas, and says so; run again it changes nothing and keeps
// what the bucket holds; on a deployment set up before the bucket existed it adds it, and the worker
// user (which may not create it) can then store and read blobs. Real `sessiond` processes, a real
// nats-server. (The 3-server cluster's 3 replicas: test/cli/setup-replicas.test.ts.)
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { jetstreamManager } from '@nats-io/jetstream';
import { ErrorCode } from '../../src/errors.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { BLOB_BUCKET, ObjectBlobStore } from '../../src/nats/object-blob-store.ts';
import { expectCode } from '../../src/testing/fixtures.ts';
import { ADMIN, WORKER, startNatsServer } from '../../src/testing/nats-server.ts';
import { runCli } from '../support/cli.ts';

const s = suite('sessiond setup makes the blob bucket');
const STREAM = `OBJ_${BLOB_BUCKET}`;
const text = (x: string) => new TextEncoder().encode(x);
/** How setup's output names the bucket. */
const BUCKET_SAID = `blob bucket ${BLOB_BUCKET} (Object Store, stream ${STREAM}: prompt parts and tool results too large for an event)`;
const setupArgs = (url: string) => ['setup', '--nats', url, '--nats-user', ADMIN.user, '--nats-pass', ADMIN.pass];

s('on a fresh server setup creates the bucket with 1 replica and says so; run again it is unchanged and keeps the blobs', async () => {
  const server = await startNatsServer({ streams: false });
  const worker = await connectNats({ servers: server.url, ...WORKER });
  const admin = await connectNats({ servers: server.url, ...ADMIN });
  try {
    // the worker user may not make it: it is told to run setup
    await expectCode(ObjectBlobStore.open(worker, { waitMs: 2_000 }), ErrorCode.NotFound, 'sessiond setup');

    const first = await runCli(setupArgs(server.url));
    assert.is(first.code, 0, first.stdout + first.stderr);
    assert.match(first.stdout, `${BUCKET_SAID} created: 1 replica,`);
    const info = await (await jetstreamManager(admin)).streams.info(STREAM);
    assert.is(info.config.num_replicas, 1);

    const store = await ObjectBlobStore.open(worker);
    const bytes = text(`a payload beside the log ${process.pid}`);
    const ref = await store.put(bytes, { mediaType: 'text/plain' });

    const again = await runCli(setupArgs(server.url));
    assert.is(again.code, 0, again.stdout + again.stderr);
    assert.match(again.stdout, `${BUCKET_SAID} unchanged: 1 replica,`);
    assert.match(again.stdout, 'in 2 messages'); // one chunk and one meta message
    assert.ok(Buffer.from(await store.get(ref.sha256)).equals(Buffer.from(bytes)), 'the blob is still there');
  } finally {
    await worker.close();
    await admin.close();
    await server.dispose();
  }
});

s('a deployment set up before the bucket existed: the worker is told to run setup, which adds the bucket and leaves the streams as they were', async () => {
  const server = await startNatsServer();
  const worker = await connectNats({ servers: server.url, ...WORKER });
  const admin = await connectNats({ servers: server.url, ...ADMIN });
  try {
    await (await jetstreamManager(admin)).streams.delete(STREAM);
    await expectCode(ObjectBlobStore.open(worker, { waitMs: 2_000 }), ErrorCode.NotFound, 'sessiond setup');
    const setup = await runCli(setupArgs(server.url));
    assert.is(setup.code, 0, setup.stdout + setup.stderr);
    assert.match(setup.stdout, 'stream SESSIOND_EVENTS unchanged; stream SESSIOND_SNAPSHOTS unchanged');
    assert.match(setup.stdout, `${BUCKET_SAID} created: 1 replica,`);
    const store = await ObjectBlobStore.open(worker);
    const ref = await store.put(text('after setup'), { mediaType: 'text/plain' });
    assert.is(ref.size, 11);
  } finally {
    await worker.close();
    await admin.close();
    await server.dispose();
  }
});

s.run();
