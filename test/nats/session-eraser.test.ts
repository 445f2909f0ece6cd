// The SessionEraser contract on NATS, as the admin user of the shipped nats.conf (the only one that
// may purge): the events and the snapshot are purged, the deletion is recorded on the audit stream.
import { test } from 'uvu';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { natsEraser } from '../../src/nats/nats-eraser.ts';
import { readDeletions } from '../../src/nats/deletion-stream.ts';
import { sessionEraserContract } from '../../src/testing/session-eraser-contract.ts';
import { ADMIN, startNatsServer, type NatsServer } from '../../src/testing/nats-server.ts';

let server: NatsServer | undefined;

sessionEraserContract('nats, as the admin user', async (clock) => {
  server ??= await startNatsServer();
  const log = await JetStreamEventLog.open({ connection: { servers: server.url, ...ADMIN }, ensureStream: false });
  return {
    log,
    eraser: natsEraser(log, clock),
    deletions: () => readDeletions(log.nc),
    cleanup: () => log.close(),
  };
}).run();

test.after(async () => {
  await server?.dispose();
});
test.run();
