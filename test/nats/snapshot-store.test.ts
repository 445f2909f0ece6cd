// The SnapshotStore contract against JetStream (stream SESSIOND_SNAPSHOTS, as the worker user of the
// shipped nats.conf), and what sharing it buys: a worker that never saw a session loads it from
// another worker's snapshot and folds only what follows.
import { jetstreamManager } from '@nats-io/jetstream';
import * as assert from 'uvu/assert';
import { connectNats } from '../../src/nats/connection.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { JetStreamSnapshotStore, SNAPSHOT_STREAM } from '../../src/nats/snapshot-store.ts';
import { STREAM_NAME } from '../../src/nats/subjects.ts';
import { CommandHandler } from '../../src/execution/command-handler.ts';
import { admitInput } from '../../src/input/admit.ts';
import { hydrate } from '../../src/machines/decider.ts';
import { systemClock } from '../../src/clock.ts';
import { sequentialIds } from '../../src/ids.ts';
import { snapshotStoreContract } from '../../src/testing/snapshot-store-contract.ts';
import { startNatsServer, setupStreams, ADMIN, CLIENT, WORKER, type NatsServer } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { spyLog } from '../support/spy-log.ts';

let server: NatsServer | undefined;

/** Deletes the streams (as the admin user) and sets them up again empty, as `sessiond setup` does (workers may not create them). */
async function deleteStreams(names: string[]): Promise<void> {
  const admin = await connectNats({ servers: server!.url, ...ADMIN });
  const jsm = await jetstreamManager(admin);
  for (const name of names) await jsm.streams.delete(name).catch(() => undefined);
  await admin.close();
  await setupStreams(server!.url);
}

const contract = snapshotStoreContract('jetstream', async () => {
  server ??= await startNatsServer();
  const nc = await connectNats({ servers: server.url, ...WORKER });
  return {
    store: await JetStreamSnapshotStore.open(nc),
    otherVersion: async () => JetStreamSnapshotStore.open(nc, { version: 'another-machine' }),
    cleanup: async () => {
      await nc.close();
      await deleteStreams([SNAPSHOT_STREAM]);
    },
  };
});

contract("shared by workers: a worker that never saw the session loads another worker's snapshot and folds only the events after it", async () => {
  const a = await JetStreamEventLog.open({ connection: { servers: server!.url, ...WORKER } });
  const b = await JetStreamEventLog.open({ connection: { servers: server!.url, ...WORKER } });
  try {
    const writer = new CommandHandler(a, systemClock, sequentialIds('a'), { snapshots: await JetStreamSnapshotStore.open(a.nc), snapshotEvery: 10 });
    for (let i = 0; i < 25; i++) await admitInput(writer, 'ses_shared', { id: `inp_${i}`, prompt: `p${i}`, wake: false });
    const store = await JetStreamSnapshotStore.open(b.nc);
    await waitFor(async () => (await store.get('ses_shared'))?.context.seq === 20, { what: 'the snapshot at seq 20 stored (in the background)' });
    const folded: number[] = [];
    const reader = new CommandHandler(
      spyLog(b, {
        afterRead: (events) => {
          folded.push(events.length);
        },
      }),
      systemClock,
      sequentialIds('b'),
      { snapshots: store },
    );
    const cold = await reader.load('ses_shared');
    assert.equal(folded, [1, 5], 'the first event (the owner the snapshot names is checked), then only the 5 events after the shared snapshot');
    assert.equal(JSON.parse(JSON.stringify(cold)), JSON.parse(JSON.stringify(hydrate('ses_shared', await b.readSession('ses_shared')))));
  } finally {
    await a.close();
    await b.close();
    await deleteStreams([SNAPSHOT_STREAM, STREAM_NAME]);
  }
});

contract('a client may neither write nor read snapshots (nats.conf): only workers share them', async () => {
  const worker = await connectNats({ servers: server!.url, ...WORKER });
  await JetStreamSnapshotStore.open(worker); // the stream exists
  const client = await connectNats({ servers: server!.url, ...CLIENT });
  try {
    let refused = false;
    await JetStreamSnapshotStore.open(client).catch(() => {
      refused = true;
    });
    assert.ok(refused, 'the client user may not use the snapshot stream');
  } finally {
    await client.close();
    await worker.close();
    await deleteStreams([SNAPSHOT_STREAM]);
  }
});

contract.after(async () => {
  await server?.dispose();
});
contract.run();
