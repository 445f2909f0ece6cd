// Debian's nats-server (`apt-get install nats-server`: 2.9.10 on bookworm) stays supported for one
// server: what a user who installs it gets. A whole worker runs turns on it, racing appends are
// fenced on its 1-replica stream, and replicas above 1 are refused with the reason (it does not fence
// appends on replicated streams: nats-server#4320, #5644, fixed by 2.10.19).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { SequenceConflictError } from '../../src/errors.ts';
import { REPLICATED_FENCING_SINCE, fencesReplicated } from '../../src/nats/stream.ts';
import { natsServerVersion } from '../../src/testing/nats-cluster.ts';
import { ADMIN, DEBIAN_NATS_SERVER_BIN, WORKER } from '../../src/testing/nats-server.ts';
import { draft, ev, uniqueId } from '../../src/testing/fixtures.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { runCli } from '../support/cli.ts';
import { natsWorld, type NatsWorld } from './helpers.ts';

if (!existsSync(DEBIAN_NATS_SERVER_BIN)) {
  throw new Error(
    `Debian's nats-server is not at ${DEBIAN_NATS_SERVER_BIN}: apt-get install nats-server (npm test installs it as root), or set SESSIOND_DEBIAN_NATS_SERVER.`,
  );
}
const VERSION = natsServerVersion(DEBIAN_NATS_SERVER_BIN);

const s = suite<{ world: NatsWorld }>(`Debian's nats-server ${VERSION}, one server`);
// no streams yet: the first test sets them up with the real `sessiond setup`
s.before(async (ctx) => {
  ctx.world = await natsWorld({ bin: DEBIAN_NATS_SERVER_BIN, streams: false });
});
s.after.each(async (ctx) => {
  await ctx.world.reset();
});
s.after(async (ctx) => {
  await ctx.world.dispose();
});

s('sessiond setup creates the 1-replica stream and refuses 3 replicas, saying why and what to use', async ({ world }) => {
  assert.not.ok(fencesReplicated(VERSION), `expected a server older than ${REPLICATED_FENCING_SINCE} here, got ${VERSION}`);
  const nats = ['--nats', world.server.url, '--nats-user', ADMIN.user, '--nats-pass', ADMIN.pass];
  // before any stream exists: refused for the fencing, whatever the servers
  const three = await runCli(['setup', ...nats, '--replicas', '3']);
  assert.is(three.code, 2, three.stdout + three.stderr);
  assert.match(three.stderr, `on nats-server ${VERSION}, which does not fence appends on replicated streams`);
  assert.match(three.stderr, `Use nats-server ${REPLICATED_FENCING_SINCE} or newer for replicas`);
  const ok = await runCli(['setup', ...nats, '--replicas', '1']);
  assert.is(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, '1 replica,');
  // the Object Store blob bucket works on 2.9 too
  assert.match(
    ok.stdout,
    'blob bucket SESSIOND_BLOBS (Object Store, stream OBJ_SESSIOND_BLOBS: prompt parts and tool results too large for an event) created: 1 replica,',
  );
  // raising it later: refused too (one server has no cluster to replicate to)
  const raise = await runCli(['setup', ...nats, '--replicas', '3']);
  assert.is(raise.code, 2, raise.stdout + raise.stderr);
  assert.match(raise.stderr, /more than 1 replica needs a JetStream cluster/i);
});

s('a whole worker runs a turn, and a client sees it settle', async ({ world }) => {
  const { engine } = await world.engine();
  await world.serve(engine);
  const client = await world.client();
  const sessionId = uniqueId('ses');
  await client.admit(sessionId, { prompt: 'hello from bookworm' });
  await engine.awaitIdle(sessionId);
  const status = await client.status(sessionId);
  assert.is(status.outcome, 'succeeded');
  assert.ok(status.seq > 3);
});

s('racing appends on its 1-replica stream: one stored, the others a SequenceConflictError', async ({ world }) => {
  const logs = await Promise.all([0, 1, 2].map(() => JetStreamEventLog.open({ connection: { servers: world.server.url, ...WORKER } })));
  try {
    for (let round = 0; round < 10; round++) {
      const sessionId = uniqueId('ses');
      const settled = await Promise.allSettled(
        logs.map((log) => log.append(sessionId, 0, [draft(ev('input.admitted', { inputId: uniqueId('inp') }), { id: uniqueId('evt') })])),
      );
      assert.is(settled.filter((x) => x.status === 'fulfilled').length, 1);
      for (const x of settled) if (x.status === 'rejected') assert.instance(x.reason, SequenceConflictError);
    }
  } finally {
    for (const log of logs) await log.close();
  }
});

s.run();
