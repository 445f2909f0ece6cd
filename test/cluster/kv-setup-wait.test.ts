/**
 * `sessiond setup` makes its KV buckets (model-call limits, tenants' budgets) as patiently as its
 * streams: an answer that passes (no JetStream quorum, "no suitable peers for placement, peer
 * offline" on a cluster still forming) is asked again for up to a minute. Before, the first such
 * answer failed setup at once (a clean-clone CI run failed so: "sessiond: no suitable peers for
 * placement, peer offline", test/cluster/replicas.test.ts), and so did the account check before the
 * first request (a bare "timeout" when no server led JetStream for 5 s: another CI run).
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
  let settled: unknown;
  const made = setupKvBucket(nc, 'SETUP_WAIT', { replicas: 3, waitMs: 60_000 }).then(
    (value) => (settled = { value }),
    (error) => (settled = { error }),
  );
  // longer than one JetStream request's timeout (5 s): its first request unanswered is asked again
  await new Promise((r) => setTimeout(r, 6_000));
  assert.is(settled, undefined, `setup waited for JetStream instead of ending: ${String((settled as { error?: unknown })?.error ?? '')}`);
  await Promise.all(others.map((n) => n.start()));
  assert.equal(await made, { value: { created: true, replicas: 3 } });
  assert.equal(await setupKvBucket(nc, 'SETUP_WAIT', { replicas: 3 }), { created: false, replicas: 3 });
});

test.run();
