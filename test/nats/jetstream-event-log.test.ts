// The EventLog contract against a real nats-server (started by the harness, one per file). Each
// test gets a fresh events stream: cleanup deletes it, the next open creates it again.
import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats } from '../../src/nats/connection.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { STREAM_NAME } from '../../src/nats/subjects.ts';
import { eventLogContract } from '../../src/testing/event-log-contract.ts';
import { startNatsServer, ADMIN, WORKER, type NatsServer } from '../../src/testing/nats-server.ts';

let server: NatsServer | undefined;

const contract = eventLogContract('jetstream', async () => {
  server ??= await startNatsServer();
  const connection = { servers: server.url, ...WORKER, reconnectWaitMs: 100 };
  const log = await JetStreamEventLog.open({ connection });
  const others: JetStreamEventLog[] = [];
  const jsm = await jetstreamManager(log.nc);
  return {
    log,
    openReads: async () => (await jsm.streams.info(STREAM_NAME)).state.consumer_count,
    another: async () => {
      const other = await JetStreamEventLog.open({ connection });
      others.push(other);
      return other;
    },
    cleanup: async () => {
      for (const o of others) await o.close();
      await log.close();
      // workers may not delete the stream (nats.conf): the admin user does
      const admin = await connectNats({ servers: server!.url, ...ADMIN });
      await (await jetstreamManager(admin)).streams.delete(STREAM_NAME);
      await admin.close();
    },
  };
});
contract.after(async () => { await server?.dispose(); });
contract.run();
