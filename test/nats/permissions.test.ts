// nats.conf permissions against a server started from it by the harness. The durable log belongs to
// workers: the client and observer users can neither publish on sessiond.events.<s> (core publish or
// the JetStream publish API) nor manage the stream, nor forge live events, nor serve commands. The
// client may send commands, subscribe to live subjects and replay; the observer may subscribe and
// replay but not send commands. nats.js v3 reports a refused core publish as an async
// PermissionViolationError on the connection's status iterator; a refused request (JetStream publish,
// API call, command) rejects with a RequestError whose cause is that error; a refused subscription
// ends with it (`sub.closed`).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { jetstream } from '@nats-io/jetstream';
import { errors as natsErrors } from '@nats-io/transport-node';
import { ErrorCode, isSessiondError } from '../../src/errors.ts';
import { committed, ev, live } from '../../src/testing/fixtures.ts';
import { CommandFailureCode, isCommandError } from '../../src/nats/command-protocol.ts';
import { isPermissionError } from '../../src/nats/connection.ts';
import { NatsLiveBus, type LiveMessage } from '../../src/nats/live-bus.ts';
import { encodeBatch } from '../../src/nats/stream.ts';
import { STREAM_NAME, subjects } from '../../src/nats/subjects.ts';
import { CLIENT, OBSERVER } from '../../src/testing/nats-server.ts';
import { natsWorld, refusedPublish, rejection, sessionId, subscriptionEnd, until, type NatsWorld, type User } from './helpers.ts';

const s = suite<{ world: NatsWorld }>('nats.conf permissions');
s.before(async (ctx) => {
  ctx.world = await natsWorld();
});
s.after.each(async (ctx) => {
  await ctx.world.reset();
});
s.after(async (ctx) => {
  await ctx.world.dispose();
});

const DEADLINE_MS = 5000;

/** A forged lease: an `execution.claimed` batch that would make `owner` the session's owner. */
function forgedClaim(id: string, seq: number): Uint8Array {
  return encodeBatch([
    committed(ev('execution.claimed', { executionId: 'exe_forged', ownerId: 'own_mallory', expiresAt: 9_999_999_999_999, leaseMs: 30_000, assistantSeq: -1 }), {
      id: `evt_forged_${seq}`,
      sessionId: id,
      seq,
      time: 1,
    }),
  ]);
}

for (const [name, user] of [
  ['client', CLIENT],
  ['observer', OBSERVER],
] as [string, User][]) {
  s(`permissions - ${name} cannot publish to sessiond.events.<s> nor forge a lease through the JetStream publish API`, async ({ world }) => {
    const { engine, log } = await world.engine();
    const id = sessionId(name);
    await engine.admit(id, { prompt: 'mine', wake: false });
    const before = await log.readSession(id);
    const nc = await world.connect(user);
    const subject = subjects.events(id);

    const core = await refusedPublish(nc, subject, () => nc.publish(subject, forgedClaim(id, 2)));
    assert.is(core.operation, 'publish');

    const viaJs = await rejection(
      jetstream(nc).publish(subject, forgedClaim(id, 2), { msgID: 'evt_forged_2', expect: { lastSubjectSequence: before.at(-1)!.position! } }),
    );
    assert.ok(isPermissionError(viaJs), `a permissions violation, got ${String(viaJs)}`);
    const fresh = sessionId(`${name}_new`);
    const newSession = await rejection(jetstream(nc).publish(subjects.events(fresh), forgedClaim(fresh, 1), { expect: { lastSubjectSequence: 0 } }));
    assert.ok(isPermissionError(newSession), 'not even into a new session');

    // nor rewrite the stream behind the log's back
    for (const api of [
      `$JS.API.STREAM.MSG.DELETE.${STREAM_NAME}`,
      `$JS.API.STREAM.PURGE.${STREAM_NAME}`,
      `$JS.API.STREAM.DELETE.${STREAM_NAME}`,
      `$JS.API.STREAM.UPDATE.${STREAM_NAME}`,
      '$JS.API.STREAM.CREATE.FORGED',
    ]) {
      const err = await rejection(nc.request(api, new TextEncoder().encode('{}'), { timeout: DEADLINE_MS }));
      assert.ok(isPermissionError(err), `${api}: refused, got ${String(err)}`);
    }
    assert.equal(
      (await log.readSession(id)).map((e) => e.id),
      before.map((e) => e.id),
      'the log is unchanged',
    );
    assert.is(await log.lastSeq(fresh), 0);
    assert.is((await engine.status(id)).execution, null, 'no forged owner');
  });

  s(`permissions - ${name} cannot forge live events or replies, nor serve commands`, async ({ world }) => {
    const nc = await world.connect(user);
    const live = subjects.live('ses_x', 'step.started');
    const forged = await refusedPublish(nc, live, () => nc.publish(live, new Uint8Array([1])));
    assert.is(forged.subject, live);
    const reply = '_INBOX.someone_elses_request';
    const spoofed = await refusedPublish(nc, reply, () => nc.publish(reply, new TextEncoder().encode('{"ok":true}')));
    assert.is(spoofed.subject, reply, "no forged replies (to commands or to a worker's JetStream reads)");
    for (const subject of [subjects.allCommands, subjects.command('admit'), subjects.allEvents]) {
      const ended = await subscriptionEnd(nc, subject, 'sessiond-workers');
      assert.ok(ended instanceof natsErrors.PermissionViolationError && ended.operation === 'subscription', `${name} may not subscribe to ${subject}`);
    }
  });
}

s('permissions - the client may send commands, subscribe to live subjects and replay', async ({ world }) => {
  const { engine, nc: workerNc } = await world.engine();
  await world.serve(engine);
  const client = await world.client(CLIENT);
  const id = sessionId('ok');
  const seen: LiveMessage[] = [];
  await client.subscribe({ sessionId: id }, (e) => {
    seen.push(e);
  });
  const receipt = await client.admit(id, { prompt: 'allowed', wake: false });
  assert.is(receipt.admittedSeq, 1);
  assert.is((await client.status(id)).pending.length, 1);
  new NatsLiveBus(workerNc).publish(live(ev('execution.started', { executionId: 'exe_1' }), { id: 'evt_live', sessionId: id, time: 1 }));
  await until(seen, (e) => e.id === 'evt_live', 'the live event');
  assert.equal(
    (await client.replay({ sessionId: id })).map((e) => e.type),
    ['input.admitted'],
  );
});

s(
  'permissions - client and observer may answer JetStream flow control (ordered push consumers, e.g. go-nats OrderedConsumer) but nothing else under $JS',
  async ({ world }) => {
    for (const user of [CLIENT, OBSERVER]) {
      const nc = await world.connect(user);
      const errors: unknown[] = [];
      const statuses = (async () => {
        for await (const st of nc.status()) if (st.type === 'error') errors.push(st.error);
      })();
      nc.publish(`$JS.FC.${STREAM_NAME}.consumer_x.1`, new Uint8Array());
      await nc.flush(); // a refusal (-ERR) would arrive before the PONG
      assert.equal(errors, [], `${user.user} may reply to flow control`);
      await refusedPublish(nc, `$JS.ACK.${STREAM_NAME}.consumer_x.1.1.1.1.0`, () =>
        nc.publish(`$JS.ACK.${STREAM_NAME}.consumer_x.1.1.1.1.0`, new Uint8Array()),
      );
      void statuses;
    }
  },
);

s('permissions - the observer may subscribe and replay but not send commands', async ({ world }) => {
  const { engine, nc: workerNc } = await world.engine();
  const service = await world.serve(engine);
  const id = sessionId('obs');
  await engine.admit(id, { prompt: 'watched', wake: false });
  const observer = await world.client(OBSERVER);
  const seen: LiveMessage[] = [];
  await observer.subscribe({}, (e) => {
    seen.push(e);
  });
  new NatsLiveBus(workerNc).publish(live(ev('execution.started', { executionId: 'exe_1' }), { id: 'evt_obs', sessionId: id, time: 1 }));
  await until(seen, (e) => e.id === 'evt_obs', 'the live event');
  assert.equal(
    (await observer.replay({ sessionId: id })).map((e) => e.type),
    ['input.admitted'],
  );
  for (const send of [() => observer.status(id), () => observer.admit(id, { prompt: 'sneaky' }), () => observer.cancel(id)]) {
    const err = await rejection(send());
    assert.ok(isCommandError(err, CommandFailureCode.PermissionDenied), `permission_denied, got ${String(err)}`);
    assert.match((err as Error).message, 'may not send sessiond commands');
    assert.ok(isSessiondError(err, ErrorCode.PermissionDenied), 'a permission failure, not a usage mistake');
  }
  assert.equal(service.stats.requests, 0, 'no command reached the worker');
  assert.is((await engine.status(id)).seq, 1);
});

s.run();
