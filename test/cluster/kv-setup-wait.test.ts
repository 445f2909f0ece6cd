/**
 * `sessiond setup` makes its KV buckets (model-call limits, tenants' budgets) as patiently as its
 * streams: an answer that passes (no JetStream quorum, "no suitable peers for placement, peer
 * offline" on a cluster still forming) is asked again for up to a minute. Before, the first such
 * answer failed setup at once (a clean-clone CI run failed so: "sessiond: no suitable peers for
 * placement, peer offline", test/cluster/replicas.test.ts).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { setupKvBucket } from '../../src/nats/kv-bucket.ts';
import { startNatsCluster, type NatsCluster } from '../../src/testing/nats-cluster.ts';

let cluster: NatsCluster;

test.before(async () => {
  cluster = await startNatsCluster();
});

test.after(async () => {
  await cluster?.dispose();
});

test('kv setup - a 3-replica bucket asked for while JetStream has no quorum is made once the servers are back', async () => {
  const nc = await cluster.adminConnection();
  const others = cluster.nodes.filter((n) => n.name !== nc.info?.server_name);
  assert.is(others.length, 2);
  // two of three servers away: no meta leader, JetStream does not answer (or says it is not available)
  await Promise.all(others.map((n) => n.stop()));
  let settled = false;
  const made = setupKvBucket(nc, 'SETUP_WAIT', { replicas: 3, waitMs: 60_000 }).finally(() => {
    settled = true;
  });
  await new Promise((r) => setTimeout(r, 2_000));
  assert.not.ok(settled, 'setup waited for JetStream instead of failing');
  await Promise.all(others.map((n) => n.start()));
  assert.equal(await made, { created: true, replicas: 3 });
  assert.equal(await setupKvBucket(nc, 'SETUP_WAIT', { replicas: 3 }), { created: false, replicas: 3 });
});

test.run();
