/**
 * Replicas on a cluster: they are the operator's (a worker opening the log leaves them as they are
 * instead of asking for 1), and sessiond refuses more than 1 on a nats-server that does not fence
 * appends on replicated streams (fencing.test.ts measures why), from `setup` and from a worker alike.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats } from '../../src/nats/connection.ts';
import { ensureEventStream, eventStreamConfig, REPLICATED_FENCING_SINCE } from '../../src/nats/stream.ts';
import { STREAM_NAME } from '../../src/nats/subjects.ts';
import { ADMIN, WORKER } from '../../src/testing/nats-server.ts';
import { fencesReplicatedStreams, natsServerVersion, startNatsCluster } from '../../src/testing/nats-cluster.ts';
import { expectCode } from '../../src/testing/fixtures.ts';
import { ErrorCode } from '../../src/errors.ts';
import { runCli } from '../support/cli.ts';

const s = suite('stream replicas on a 3-server cluster');
const VERSION = natsServerVersion();

s("replicas are the operator's; more than 1 is refused on a server that does not fence them", async () => {
  const cluster = await startNatsCluster();
  try {
    const setup = await runCli(['setup', '--nats', cluster.url, '--nats-user', ADMIN.user, '--nats-pass', ADMIN.pass, '--replicas', '3']);
    if (fencesReplicatedStreams(VERSION)) {
      assert.is(setup.code, 0, setup.stderr);
    } else {
      assert.is(setup.code, 2, setup.stdout + setup.stderr);
      assert.match(setup.stderr, `on nats-server ${VERSION}, which does not fence appends on replicated streams`);
      assert.match(setup.stderr, `Use nats-server ${REPLICATED_FENCING_SINCE} or newer for replicas, or 1 replica`);
      // an operator who made a 3-replica stream anyway (here: directly, as admin)
      const admin = await connectNats({ servers: cluster.urls, ...ADMIN });
      await (await jetstreamManager(admin)).streams.add(eventStreamConfig({ replicas: 3 }));
      await admin.close();
    }
    await cluster.waitStreamCurrent(STREAM_NAME, { replicas: 3 });
    const worker = await connectNats({ servers: cluster.urls, ...WORKER });
    try {
      const jsm = await jetstreamManager(worker);
      // on a server that fences: the worker opens the stream as it is (it may not change it, and does not try)
      const opened = await ensureEventStream(jsm, { serverVersion: REPLICATED_FENCING_SINCE });
      assert.is(opened.config.num_replicas, 3, 'left at 3 replicas');
      // on this server: refused, for the fencing (not as a change of replicas it may not make)
      if (!fencesReplicatedStreams(VERSION)) {
        const refused = await expectCode(
          ensureEventStream(jsm, { serverVersion: VERSION }),
          ErrorCode.InvalidOption,
          'does not fence appends on replicated streams',
        );
        assert.not.match(refused.message, 'replicas 3 -> 1');
      }
    } finally {
      await worker.close();
    }
  } finally {
    await cluster.dispose();
  }
});

s.run();
