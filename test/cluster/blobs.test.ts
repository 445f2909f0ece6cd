/**
 * Blobs on a 3-server cluster: the Object Store bucket made with 3 replicas passes the blob store
 * contract as the worker user, a blob whose put was acknowledged is read whole after the
 * bucket's stream leader is killed, and a real `sessiond start --nats` worker on the cluster sends
 * a 6 MB image and a 3 MB tool result to the model whole (test/nats/blob-turns.ts).
 */
import * as assert from 'uvu/assert';
import { ManualClock } from '../../src/clock.ts';
import { createHash } from 'node:crypto';
import { connectNats } from '../../src/nats/connection.ts';
import { BLOB_BUCKET, ObjectBlobStore, setupBlobBucket } from '../../src/nats/object-blob-store.ts';
import { blobStoreContract, pseudoRandomBytes } from '../../src/testing/blob-store-contract.ts';
import { startNatsCluster, type NatsCluster } from '../../src/testing/nats-cluster.ts';
import { COMMANDS, WORKER } from '../../src/testing/nats-server.ts';
import { startCli, type LongRunning } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { checkBlobTurns } from '../nats/blob-turns.ts';
import { REPLICAS, setupStream } from './helpers.ts';

const STREAM = `OBJ_${BLOB_BUCKET}`;
let cluster: NatsCluster | undefined;

async function started(): Promise<NatsCluster> {
  if (!cluster) {
    cluster = await startNatsCluster();
    const admin = await cluster.adminConnection();
    const made = await setupBlobBucket(await cluster.admin(), { replicas: 3, serverVersion: admin.info?.version });
    assert.is(made.info.config.num_replicas, 3);
    await cluster.waitStreamCurrent(STREAM, { replicas: 3 });
  }
  return cluster;
}

const contract = blobStoreContract('nats object store, 3 replicas', async () => {
  const c = await started();
  const nc = await connectNats({ servers: c.urls, ...WORKER });
  const clock = new ManualClock(Date.now());
  return { store: await ObjectBlobStore.open(nc, { clock }), clock, cleanup: () => nc.close() };
});

contract('cluster blobs - an acknowledged 6 MB blob is read whole after the stream leader is killed', async () => {
  const c = await started();
  const nc = await connectNats({ servers: c.urls, ...WORKER });
  try {
    const store = await ObjectBlobStore.open(nc);
    const bytes = pseudoRandomBytes(6 * 1000 * 1000, `leader-${process.pid}`);
    const ref = await store.put(bytes, { mediaType: 'application/octet-stream' });
    const leader = await c.streamLeader(STREAM);
    await leader.kill();
    await c.streamLeader(STREAM, 30_000);
    const back = await store.get(ref.sha256);
    assert.is(createHash('sha256').update(back).digest('hex'), ref.sha256);
    await leader.start();
    await c.waitStreamCurrent(STREAM, { replicas: 3 });
  } finally {
    await nc.close();
  }
});

contract('cluster blobs - a real worker on the cluster: a 6 MB image prompt and a 3 MB tool result reach the model whole', async () => {
  const c = await started();
  assert.match(await setupStream(c, REPLICAS), `${BLOB_BUCKET}`);
  const tmp = tempDir('sessiond-cluster-blobs-');
  let worker: LongRunning | undefined;
  try {
    await checkBlobTurns(
      c.urls,
      async (flags) => {
        const nats = ['--nats', c.url, '--nats-user', WORKER.user, '--nats-pass', WORKER.pass];
        const commands = ['--nats-commands-user', COMMANDS.user, '--nats-commands-pass', COMMANDS.pass];
        worker = startCli(['start', ...nats, ...commands, '--db', tmp.file('w.db'), ...flags]);
        await worker.waitFor('send it a prompt', 30_000);
        return worker;
      },
      'cluster',
    );
  } finally {
    if (worker && worker.child.exitCode === null) {
      worker.child.kill('SIGKILL');
      await worker.exited;
    }
    tmp.remove();
  }
});

contract.after(async () => {
  await cluster?.dispose();
});

contract.run();
