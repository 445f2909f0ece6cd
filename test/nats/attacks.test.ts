// The attacks an outside service found against a worker on the repo's nats.conf, replayed from the
// outside with raw nats.js connections as each user, against a real nats-server. Each test shows the
// hole is closed and that the stream, the projection and live delivery are untouched afterwards:
//
// 1. a command whose reply subject is the JetStream API, the log or a live subject (confused deputy);
// 2. learning a worker's consumer names or inbox (to delete its consumers or push into its inbox),
//    and a worker whose consumers are deleted anyway;
// 3. a push consumer delivering stored frames into the command queue group or a live subject;
// 4. reading other users' replies;
// 5. the worker user purging, deleting or reconfiguring the stream, or serving commands;
// 6. a poisoned message in the log (quarantined, reported by `sessiond check`).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { errors as natsErrors, type NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, isSessiondError } from '../../src/errors.ts';
import { isPermissionError } from '../../src/nats/connection.ts';
import type { RefusedReply } from '../../src/nats/command-service.ts';
import type { InvalidLiveMessage } from '../../src/client/client.ts';
import type { LiveMessage } from '../../src/nats/live-bus.ts';
import { COMMAND_QUEUE, STREAM_NAME, subjects } from '../../src/nats/subjects.ts';
import { quarantinedMessages } from '../../src/storage/sqlite/quarantine-store.ts';
import { ADMIN, CLIENT, COMMANDS, OBSERVER, WORKER } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { runCli } from '../support/cli.ts';
import { natsWorld, refusedPublish, rejection, sessionId, subscriptionEnd, until, type NatsWorld, type User } from './helpers.ts';

const s = suite<{ world: NatsWorld }>('NATS attacks from outside');
s.before(async (ctx) => {
  ctx.world = await natsWorld();
});
s.after.each(async (ctx) => {
  await ctx.world.reset();
});
s.after(async (ctx) => {
  await ctx.world.dispose();
});

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const DEADLINE_MS = 5000;

/** The stream's message count and last sequence, read as the admin user. */
async function streamState(world: NatsWorld): Promise<{ messages: number; last: number }> {
  const jsm = await jetstreamManager(await world.connect(ADMIN));
  const { state } = await jsm.streams.info(STREAM_NAME);
  return { messages: state.messages, last: state.last_seq };
}

/** A subscription the server refuses (resolves once it is closed with a permissions violation). */
async function refusedSubscription(nc: NatsConnection, subject: string, queue?: string): Promise<boolean> {
  const ended = await subscriptionEnd(nc, subject, queue);
  return ended instanceof natsErrors.PermissionViolationError && ended.operation === 'subscription';
}

s(
  'attack 1 - a command whose reply subject is the JetStream API, the log or a live subject is refused unrun: nothing purged, nothing stored, nothing published',
  async ({ world }) => {
    const { engine, log } = await world.engine();
    const refused: RefusedReply[] = [];
    const service = await world.serve(engine, { onRefusedReply: (r) => refused.push(r) });
    const victim = sessionId('victim');
    const bystander = sessionId('bystander');
    await engine.admit(victim, { prompt: 'keep me', wake: false });
    await engine.admit(bystander, { prompt: 'and me', wake: false });
    const before = await log.readAll();
    const state = await streamState(world);

    const observer = await world.client(OBSERVER);
    const invalid: InvalidLiveMessage[] = [];
    await observer.subscribe({}, () => {}, { onInvalid: (i) => invalid.push(i) });

    const attacker = await world.connect(CLIENT);
    const replies = [
      `$JS.API.STREAM.PURGE.${STREAM_NAME}`,
      `$JS.API.STREAM.DELETE.${STREAM_NAME}`,
      `$JS.API.STREAM.MSG.DELETE.${STREAM_NAME}`,
      subjects.events(victim),
      subjects.live(victim, 'execution.settled'),
      subjects.command('admit'),
      '_INBOX_client.*',
      '_INBOX_client.>',
      '_INBOX_client',
      'anything.else',
    ];
    // one at a time: a worker takes one request per place in the queue group and renews the place
    // after it, so plain publishes sent in a burst (nobody retries them) could find no place open
    const sends: [string, Uint8Array][] = [
      ...replies.map((reply) => [reply, json({ sessionId: victim })] as [string, Uint8Array]),
      [`$JS.API.STREAM.PURGE.${STREAM_NAME}`, json({ sessionId: victim, prompt: 'sneaked in' })],
    ];
    for (const [i, [reply, body]] of sends.entries()) {
      attacker.publish(subjects.command(i < replies.length ? 'status' : 'admit'), body, { reply });
      await attacker.flush();
      await waitFor(() => service.stats.refusedReplies === i + 1, { timeoutMs: DEADLINE_MS, what: `the request with reply subject ${reply} refused` });
    }

    assert.equal(refused.map((r) => r.reply).sort(), [...replies, `$JS.API.STREAM.PURGE.${STREAM_NAME}`].sort());
    assert.match(refused[0]!.message, 'neither run nor answered');
    assert.equal(await streamState(world), state, 'the stream kept every message and stored nothing new');
    assert.equal(
      (await log.readAll()).map((e) => e.id),
      before.map((e) => e.id),
      'the log is unchanged',
    );
    assert.is(await log.lastSeq(victim), 1, 'the admit with a foreign reply subject did not run');
    // the worker goes on: a proper request is answered and appends after sequence 1 (no sequence conflict)
    const client = await world.client(CLIENT);
    assert.is((await client.admit(victim, { prompt: 'a proper request', wake: false })).admittedSeq, 2);
    assert.is((await client.status(bystander)).seq, 1);
    assert.equal(invalid, [], 'nothing but sessiond events reached the live subjects');
  },
);

s(
  'attack 1 - even a command service told to reply anywhere cannot reach the JetStream API: the commands user may publish only into client inboxes',
  async ({ world }) => {
    const { engine, log } = await world.engine();
    const commands = await world.connect(COMMANDS);
    const { startCommandService } = await import('../../src/nats/command-service.ts');
    const misconfigured = startCommandService(commands, engine, { replyPrefixes: ['$JS.API', 'sessiond'], onError: () => {} });
    world.defer(() => misconfigured.close());
    const id = sessionId('deputy');
    await engine.admit(id, { prompt: 'still here', wake: false });
    const state = await streamState(world);
    const attacker = await world.connect(CLIENT);
    const purge = `$JS.API.STREAM.PURGE.${STREAM_NAME}`;
    await refusedPublish(commands, purge, () => attacker.publish(subjects.command('status'), json({ sessionId: id }), { reply: purge }));
    await refusedPublish(commands, subjects.events(id), () =>
      attacker.publish(subjects.command('status'), json({ sessionId: id }), { reply: subjects.events(id) }),
    );
    assert.equal(await streamState(world), state, 'the server refused the replies: nothing purged, nothing stored');
    assert.is(await log.lastSeq(id), 1);
  },
);

for (const [name, user, other] of [
  ['client', CLIENT, OBSERVER],
  ['observer', OBSERVER, CLIENT],
] as [string, User, User][]) {
  s(
    `attack 2, 4 - the ${name} cannot read anyone else's inbox, list consumers or watch advisories: no replies, consumer names or worker inboxes leak`,
    async ({ world }) => {
      const nc = await world.connect(user);
      for (const subject of [
        '_INBOX.>',
        '_INBOX_worker.>',
        '_INBOX_commands.>',
        '_INBOX_admin.>',
        `_INBOX_${other.user}.>`,
        '$JS.EVENT.>',
        '$JS.EVENT.ADVISORY.>',
        '>',
        '$JS.ACK.>',
      ]) {
        assert.ok(await refusedSubscription(nc, subject), `${name} may not subscribe to ${subject}`);
      }
      for (const api of [`$JS.API.CONSUMER.LIST.${STREAM_NAME}`, `$JS.API.CONSUMER.NAMES.${STREAM_NAME}`, '$JS.API.STREAM.LIST', '$JS.API.STREAM.NAMES']) {
        const err = await rejection(nc.request(api, json({}), { timeout: DEADLINE_MS }));
        assert.ok(isPermissionError(err), `${api}: refused, got ${String(err)}`);
      }
    },
  );
}

s("attack 4 - the client's replies come back on its own inbox prefix, which the observer cannot read", async ({ world }) => {
  const { engine } = await world.engine();
  await world.serve(engine);
  const observer = await world.connect(OBSERVER);
  assert.ok(await refusedSubscription(observer, '_INBOX_client.>'));
  const client = await world.client(CLIENT);
  const id = sessionId('mine');
  await client.admit(id, { prompt: 'for my eyes', wake: false });
  // a request from a connection whose inbox is not _INBOX_client gets no answer from the worker
  const stranger = await world.connect(OBSERVER);
  const err = await rejection(stranger.request(subjects.command('status'), json({ sessionId: id }), { timeout: 500 }));
  assert.ok(isPermissionError(err), 'the observer may not even send it');
  assert.is((await client.status(id)).seq, 1);
});

s(
  'attack 2 - a worker whose log consumers are deleted anyway (a leaked name) resumes at once: projection and live delivery go on, nothing lost',
  async ({ world }) => {
    const { engine, log, host } = await world.engine();
    const worker = host!.worker;
    const watcher = await world.client(OBSERVER);
    const seen: LiveMessage[] = [];
    await watcher.subscribe({}, (e) => {
      seen.push(e);
    });
    const first = sessionId('before');
    await engine.admit(first, { prompt: 'one two' });
    await engine.awaitIdle(first);
    await waitFor(() => worker.position >= 1 && worker.projector!.checkpoint() === worker.position, { what: 'the projection to follow the log' });

    const admin = await jetstreamManager(await world.connect(ADMIN));
    const names: string[] = [];
    for await (const c of admin.consumers.list(STREAM_NAME)) names.push(c.name);
    assert.ok(names.length > 0, 'the worker reads the log with consumers');
    for (const name of names) await admin.consumers.delete(STREAM_NAME, name);

    const after = sessionId('after');
    await engine.admit(after, { prompt: 'three four' });
    await engine.awaitIdle(after);
    const head = await log.head();
    // the deadline is the bound: the consumer's own heartbeats would notice only after 30 s or more
    await waitFor(() => worker.projector!.checkpoint() >= head, {
      timeoutMs: 10_000,
      what: 'the projection to catch up within 10 s after its consumer was deleted',
    });
    await until(seen, (e) => e.sessionId === after && e.type === 'execution.settled', 'the later turn live');
    const rows = engine.db.prepare('SELECT COUNT(*) AS n FROM session_input WHERE session_id IN (?, ?)').get(first, after) as { n: number };
    assert.is(rows.n, 2, 'both inputs projected, nothing lost');
  },
);

s("attack 3 - an observer's push consumer delivering stored frames into the command queue group or a live subject disturbs no one", async ({ world }) => {
  const { engine, nc } = await world.engine();
  const service = await world.serve(engine, { onRefusedReply: () => {}, onError: () => {} });
  const id = sessionId('pushed');
  await engine.admit(id, { prompt: 'frames to push', wake: false });
  await nc.flush(); // the admission's own live event has passed the server before anyone subscribes
  const client = await world.client(CLIENT);
  const invalid: InvalidLiveMessage[] = [];
  const admitted: LiveMessage[] = [];
  // a subscriber of exactly one live subject (push consumers deliver to literal interest)
  await client.subscribe(
    { sessionId: id, type: 'input.admitted' },
    (e) => {
      admitted.push(e);
    },
    { onInvalid: (i) => invalid.push(i) },
  );

  const observer = await jetstreamManager(await world.connect(OBSERVER));
  const intoCommands = await observer.consumers.add(STREAM_NAME, {
    deliver_subject: subjects.command('admit'),
    deliver_group: COMMAND_QUEUE,
    ack_policy: AckPolicy.None,
    deliver_policy: DeliverPolicy.All,
  });
  const intoLive = await observer.consumers.add(STREAM_NAME, {
    deliver_subject: subjects.live(id, 'input.admitted'),
    ack_policy: AckPolicy.None,
    deliver_policy: DeliverPolicy.All,
  });
  await waitFor(() => invalid.length > 0, { what: 'the pushed frames to arrive' });
  // frames pushed at the command subjects reach no worker (the service subscribes with a wildcard,
  // and push consumers deliver to literal interest only); had one arrived, its reply subject (the
  // JetStream ack subject) would have had it refused unrun, as in attack 1
  assert.is(service.stats.requests, 0, 'no frame reached the command service');
  await observer.consumers.delete(STREAM_NAME, intoCommands.name);
  await observer.consumers.delete(STREAM_NAME, intoLive.name);

  assert.ok(
    invalid.every((i) => isSessiondError(i.error, ErrorCode.DecodeFailed)),
    'the pushed frames are reported as invalid live messages, not taken as events',
  );
  assert.equal(admitted, [], 'no pushed frame was delivered as an event');
  assert.is(await engine.log.lastSeq(id), 1, 'nothing was run from a pushed frame (its reply subject is the JetStream ack subject)');
  assert.is((await client.admit(id, { prompt: 'the worker still serves', wake: false })).admittedSeq, 2);
  await until(admitted, (e) => e.seq === 2, 'the real admission, live, after the push');
});

s(
  'attack 5 - the worker user cannot purge, delete or reconfigure the stream, nor answer commands; the stream itself denies deleting a message, even to the admin',
  async ({ world }) => {
    const { engine } = await world.engine();
    const id = sessionId('kept');
    await engine.admit(id, { prompt: 'immutable', wake: false });
    const state = await streamState(world);
    const worker = await world.connect(WORKER);
    for (const api of [
      `$JS.API.STREAM.PURGE.${STREAM_NAME}`,
      `$JS.API.STREAM.DELETE.${STREAM_NAME}`,
      `$JS.API.STREAM.UPDATE.${STREAM_NAME}`,
      `$JS.API.STREAM.MSG.DELETE.${STREAM_NAME}`,
      '$JS.API.STREAM.CREATE.OTHER',
    ]) {
      const err = await rejection(worker.request(api, json({}), { timeout: DEADLINE_MS }));
      assert.ok(isPermissionError(err), `worker: ${api} refused, got ${String(err)}`);
    }
    assert.ok(await refusedSubscription(worker, subjects.allCommands, 'sessiond-workers'), 'the worker user may not serve commands (no forged status)');
    const admin = await jetstreamManager(await world.connect(ADMIN));
    // purging one session's subject is the admin's alone (sessiond delete --nats; nats.conf keeps it from everyone else);
    // removing a single message, which would rewrite a session's history, the stream denies to every user
    const removal = await rejection(admin.streams.deleteMessage(STREAM_NAME, 1));
    assert.match(String(removal), /delete/i, 'the stream denies deleting a message, even to the admin user');
    assert.equal(await streamState(world), state);
  },
);

s('attack 6 - a poisoned message is quarantined: the projection, live delivery and the session itself go on, and check reports it', async ({ world }) => {
  const reported: string[] = [];
  const { engine, log, host } = await world.engine({ host: { report: { out: () => {}, err: (line) => reported.push(line) } } });
  const worker = host!.worker;
  const watcher = await world.client(OBSERVER);
  const seen: LiveMessage[] = [];
  await watcher.subscribe({}, (e) => {
    seen.push(e);
  });

  const victim = sessionId('poisoned');
  await engine.admit(victim, { prompt: 'before the poison' });
  await engine.awaitIdle(victim);
  const last = (await log.readSession(victim)).at(-1)!;
  // a misbehaving writer with the worker's rights appends JSON, then bytes that are not msgpack at all
  const js = jetstream(await world.connect(WORKER));
  const poison1 = await js.publish(subjects.events(victim), json({ ok: true, seq: 15 }), { expect: { lastSubjectSequence: last.position! } });
  const poison2 = await js.publish(subjects.events(victim), new Uint8Array([0xc1, 0xc1, 0xc1]), { expect: { lastSubjectSequence: poison1.seq } });

  const other = sessionId('other');
  await engine.admit(other, { prompt: 'after the poison' });
  await engine.awaitIdle(other);
  const again = await engine.admit(victim, { prompt: 'the victim goes on' });
  assert.is(again.admittedSeq, last.seq + 1, 'the victim continues from its last valid event');
  await engine.awaitIdle(victim);
  const head = await log.head();
  await waitFor(() => worker.projector!.checkpoint() >= head, { what: 'the projection past the poisoned messages' });
  await until(seen, (e) => e.sessionId === other && e.type === 'execution.settled', 'live delivery after the poison');
  await until(seen, (e) => e.sessionId === victim && e.seq === again.admittedSeq, 'the victim, live, after the poison');

  const quarantined = quarantinedMessages(engine.db);
  assert.equal(
    quarantined.map((q) => q.position),
    [poison1.seq, poison2.seq],
    "both recorded in the worker's database, once each",
  );
  assert.is(log.stats.quarantined, 2);
  assert.ok(quarantined.every((q) => q.sessionId === victim && q.code === ErrorCode.DecodeFailed));
  for (const q of quarantined)
    assert.ok(
      reported.some((line) => line.includes(`quarantined message ${q.position}`)),
      `message ${q.position} reported: ${reported.join(' | ')}`,
    );
  const rows = engine.db.prepare('SELECT COUNT(*) AS n FROM session_input WHERE session_id IN (?, ?)').get(victim, other) as { n: number };
  assert.is(rows.n, 3, 'every input projected');

  const check = await runCli(['check', '--nats', world.server.url, '--nats-user', OBSERVER.user, '--nats-pass', OBSERVER.pass]);
  assert.is(check.code, 1, check.stdout + check.stderr);
  assert.match(check.stdout, `QUARANTINED quarantined message ${poison1.seq} on ${subjects.events(victim)}`);
  assert.match(check.stdout, `QUARANTINED quarantined message ${poison2.seq} on ${subjects.events(victim)}`);
  assert.match(check.stdout, '2 stored messages are not valid sessiond event batches');
  assert.match(check.stdout, 'otherwise no violations');
});

s.run();
