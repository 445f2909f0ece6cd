// The EventLog contract against a real nats-server (started by the harness, one per file). Each
// test gets a fresh events stream: cleanup deletes it, the next open creates it again.
import { jetstreamManager } from '@nats-io/jetstream';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { STREAM_NAME } from '../../src/nats/subjects.ts';
import { eventLogContract } from '../../src/testing/event-log-contract.ts';
import { startNatsServer, WORKER, type NatsServer } from '../../src/testing/nats-server.ts';

let server: NatsServer | undefined;

const contract = eventLogContract('jetstream', async () => {
  server ??= await startNatsServer();
  const connection = { servers: server.url, ...WORKER, reconnectWaitMs: 100 };
  const log = await JetStreamEventLog.open({ connection });
  const others: JetStreamEventLog[] = [];
  return {
    log,
    another: async () => {
      const other = await JetStreamEventLog.open({ connection });
      others.push(other);
      return other;
    },
    cleanup: async () => {
      for (const o of others) await o.close();
      const jsm = await jetstreamManager(log.nc);
      await jsm.streams.delete(STREAM_NAME);
      await log.close();
    },
  };
});
contract.after(async () => { await server?.dispose(); });
contract.run();
