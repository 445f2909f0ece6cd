// `sessiond setup` without --replicas, on the 3-server harness (src/testing/nats-cluster.ts): new
// streams get 3 replicas on a JetStream cluster whose servers fence appends on replicated streams (1
// on older ones, with a note); an existing stream keeps its replicas, and an R1 stream on a cluster
// gets a hint to run `setup --replicas 3`. The blob bucket (SESSIOND_BLOBS) follows the events
// stream's replicas. (A single server's default of 1 replica is in test/nats/hostile-streams.test.ts.)
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { STREAM_NAME } from '../../src/nats/subjects.ts';
import { SNAPSHOT_STREAM } from '../../src/nats/snapshot-store.ts';
import { BLOB_BUCKET } from '../../src/nats/object-blob-store.ts';
import { REPLICATED_FENCING_SINCE } from '../../src/nats/stream.ts';
import { fencesReplicatedStreams, natsServerVersion, startNatsCluster } from '../../src/testing/nats-cluster.ts';
import { ADMIN } from '../../src/testing/nats-server.ts';
import { runCli } from '../support/cli.ts';

const s = suite('setup replicas by default');
const VERSION = natsServerVersion();
const FENCES = fencesReplicatedStreams(VERSION);

/** `sessiond setup` as admin, run again while the cluster's meta leader does not answer yet (bounded). */
async function setup(url: string, ...more: string[]) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const r = await runCli(['setup', '--nats', url, '--nats-user', ADMIN.user, '--nats-pass', ADMIN.pass, ...more]);
    if (r.code === 0 || Date.now() > deadline || !/did not answer|timeout|TIMEOUT|no suitable peers|insufficient resources/i.test(r.stderr)) return r;
  }
}

s(
  'a new stream on a cluster gets 3 replicas (1 where the servers do not fence them); an existing one keeps its replicas, with a hint when it has 1',
  async () => {
    const cluster = await startNatsCluster();
    try {
      const first = await setup(cluster.url);
      assert.is(first.code, 0, first.stdout + first.stderr);
      const replicas = FENCES ? 3 : 1;
      // the blob bucket's stream follows the events stream's replicas
      for (const name of [STREAM_NAME, SNAPSHOT_STREAM, `OBJ_${BLOB_BUCKET}`]) {
        const info = await cluster.waitStreamCurrent(name, { replicas });
        assert.is(info.config.num_replicas, replicas, `${name} replicas`);
      }
      assert.match(first.stdout, `${replicas} replica${replicas === 1 ? '' : 's'},`);
      assert.match(first.stdout, new RegExp(`blob bucket ${BLOB_BUCKET} \\(.*\\) created: ${replicas} replicas?,`));
      if (!FENCES)
        assert.match(
          first.stdout,
          `does not fence appends on replicated streams: new streams get 1 replica (nats-server ${REPLICATED_FENCING_SINCE} or newer for 3)`,
        );
      assert.not.match(first.stdout, 'hint:');
      if (!FENCES) return; // replicas above 1 stay refused there (test/cluster/replicas.test.ts)

      // an operator's R1 streams: setup without --replicas keeps them, and says how to get 3
      const one = await setup(cluster.url, '--replicas', '1');
      assert.is(one.code, 0, one.stdout + one.stderr);
      await cluster.waitStreamCurrent(STREAM_NAME, { replicas: 1 });
      assert.match(one.stdout, new RegExp(`blob bucket ${BLOB_BUCKET} \\(.*\\) changed num_replicas 3 -> 1: 1 replica,`));
      await cluster.waitStreamCurrent(`OBJ_${BLOB_BUCKET}`, { replicas: 1 });
      const kept = await setup(cluster.url);
      assert.is(kept.code, 0, kept.stdout + kept.stderr);
      assert.match(kept.stdout, '1 replica,');
      assert.match(kept.stdout, 'stream SESSIOND_EVENTS unchanged');
      assert.match(kept.stdout, new RegExp(`blob bucket ${BLOB_BUCKET} \\(.*\\) unchanged: 1 replica,`));
      assert.match(kept.stdout, 'run `sessiond setup --replicas 3`');
    } finally {
      await cluster.dispose();
    }
  },
);

s.run();
