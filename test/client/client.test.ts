// The typed client against a real nats-server: live subscriptions decode and schema-check every
// message, skip and report undecodable ones (with subject and seq) and keep delivering; repeats of a
// committed event are delivered once; replay reads the durable stream as the client user.
import { suite } from 'uvu';
import { errors as natsErrors } from '@nats-io/transport-node';
import * as assert from 'uvu/assert';
import { ErrorCode, isSessiondError } from '../../src/errors.ts';
import { pack } from '../../src/events/codec.ts';
import { encodeLiveEvent, NatsLiveBus, type LiveMessage } from '../../src/nats/live-bus.ts';
import type { InvalidLiveMessage } from '../../src/client/client.ts';
import { subjects } from '../../src/nats/subjects.ts';
import { CLIENT, OBSERVER } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { ev, live } from '../../src/testing/fixtures.ts';
import { natsWorld, sessionId, until, type NatsWorld } from '../nats/helpers.ts';

const s = suite<{ world: NatsWorld }>('NATS client');
s.before(async (ctx) => {
  ctx.world = await natsWorld();
});
s.after.each(async (ctx) => {
  await ctx.world.reset();
});
s.after(async (ctx) => {
  await ctx.world.dispose();
});

const step = (sessionId: string, n: number, extra: Record<string, unknown> = {}) => ({
  ...live(ev('step.started', { executionId: 'exe_1', messageId: `msg_${n}`, step: n }), { id: `evt_${sessionId}_${n}`, sessionId, time: 1000 + n }),
  ...extra,
});

s('client subscribe - an undecodable live message is reported with its subject (and seq) and skipped; valid ones keep coming', async ({ world }) => {
  const worker = await world.connect();
  const bus = new NatsLiveBus(worker);
  const client = await world.client();
  const id = sessionId('bad');
  const got: LiveMessage[] = [];
  const invalid: InvalidLiveMessage[] = [];
  const errors: unknown[] = [];
  const sub = await client.subscribe(
    { sessionId: id },
    (e) => {
      got.push(e);
      if (e.id.endsWith('_2')) throw new Error('handler bug');
    },
    { onInvalid: (i) => invalid.push(i), onError: (e) => errors.push(e) },
  );
  assert.is(sub.subject, `sessiond.live.${id}.>`);

  const subject = subjects.live(id, 'step.started');
  bus.publish(step(id, 1));
  worker.publish(subject, new Uint8Array([0xc1, 0xde, 0xad, 0xbe, 0xef])); // garbage bytes, as the worker user
  bus.publish(step(id, 2)); // the handler throws on this one
  worker.publish(subject, pack({ ...step(id, 3), version: 1, seq: 7, payload: { step: 'three' } })); // readable, but fails its schema
  worker.publish(subjects.live(id, 'tool.called'), encodeLiveEvent(step(id, 4))); // says step.started on a tool.called subject
  bus.publish(step(id, 5));
  await until(got, (e) => e.id.endsWith('_5'), 'the event after the bad ones');

  assert.equal(
    got.map((e) => e.id),
    [1, 2, 5].map((n) => `evt_${id}_${n}`),
  );
  assert.equal(got[0], { ...step(id, 1), version: 1 }, 'decoded with its schema version');
  assert.equal(
    invalid.map((i) => [i.subject, i.seq, i.error.code]),
    [
      [subject, undefined, ErrorCode.DecodeFailed],
      [subject, 7, ErrorCode.InvalidPayload],
      [subjects.live(id, 'tool.called'), undefined, ErrorCode.DecodeFailed],
    ],
  );
  assert.match(invalid[0]!.error.message, `Live message on ${subject} is not a valid sessiond event: invalid msgpack`);
  assert.is(errors.length, 1, 'the handler error went to onError');
  assert.equal(sub.stats, { delivered: 3, invalid: 3, duplicates: 0, backfilled: 0 });
  await sub.close();
  await sub.done;
});

s('client subscribe - a committed event published by several workers is delivered once; filters by type and family', async ({ world }) => {
  const worker = await world.connect();
  const bus = new NatsLiveBus(worker);
  const client = await world.client();
  const id = sessionId('dup');
  const all: LiveMessage[] = [];
  const tools: LiveMessage[] = [];
  const sub = await client.subscribe({ sessionId: id }, (e) => {
    all.push(e);
  });
  const toolSub = await client.subscribe({ type: 'tool.*' }, (e) => {
    tools.push(e);
  });
  const raw = await client.subscribe({ sessionId: id }, () => {}, { dedupe: false });
  const committed = (n: number) => step(id, n, { seq: n, position: 100 + n });
  for (const n of [1, 2, 2, 1, 3]) bus.publish(committed(n)); // a second, slower republisher repeats 2 and 1
  bus.publish(step(id, 9)); // live-only events are never deduplicated
  bus.publish(step(id, 9));
  bus.publish(live(ev('tool.started', { executionId: 'exe_1', messageId: 'msg_1', callId: 'call_1' }), { id: 'evt_tool', sessionId: id, time: 1 }));
  await until(all, (e) => e.type === 'tool.started', 'the last event');
  assert.equal(
    all.map((e) => e.seq ?? e.type),
    [1, 2, 3, 'step.started', 'step.started', 'tool.started'],
  );
  assert.is(sub.stats.duplicates, 2);
  await waitFor(() => raw.stats.delivered === 8, { what: 'every copy on the subscription without dedupe' });
  await until(tools, (e) => e.id === 'evt_tool', 'the tool event on tool.*');
  assert.equal(
    tools.map((e) => e.type),
    ['tool.started'],
  );
  assert.is(toolSub.subject, 'sessiond.live.*.tool.*');
  const bad = await client
    .subscribe({ type: 'tools' }, () => {})
    .then(
      () => undefined,
      (e) => e,
    );
  assert.ok(isSessiondError(bad, ErrorCode.InvalidOption) && /Invalid live event type filter "tools"/.test(bad.message));
});

s('client - admit and watch one session end to end, then replay it from the durable stream', async ({ world }) => {
  const { engine } = await world.engine();
  await world.serve(engine);
  const client = await world.client();
  const id = sessionId('e2e');
  const seen: LiveMessage[] = [];
  await client.subscribe({ sessionId: id }, (e) => {
    seen.push(e);
  });
  await client.admit(id, { prompt: 'watch me stream' });
  await until(seen, (e) => e.type === 'execution.settled', 'the settled turn');
  assert.ok(
    seen.some((e) => e.type === 'text.delta'),
    'deltas arrived',
  );

  const replayed = await client.replay({ sessionId: id });
  assert.equal(
    replayed.map((e) => e.id),
    seen.filter((e) => e.seq !== undefined).map((e) => e.id),
    'replay = the committed live events',
  );
  assert.ok(replayed.every((e) => e.type !== 'text.delta'));
  const fromSeq = await client.replay({ sessionId: id, afterSeq: 3, limit: 2 });
  assert.equal(
    fromSeq.map((e) => e.seq),
    [4, 5],
  );
  const middle = replayed[Math.floor(replayed.length / 2)]!.position!;
  const afterPos = await client.replay({ after: middle });
  assert.ok(afterPos.length > 0 && afterPos.every((e) => e.position! > middle));
  assert.equal(
    afterPos.filter((e) => e.sessionId === id).map((e) => e.id),
    replayed.filter((e) => e.position! > middle).map((e) => e.id),
  );
  assert.equal(
    (await client.replay({ sessionId: id, after: middle })).map((e) => e.id),
    replayed.filter((e) => e.position! > middle).map((e) => e.id),
  );

  const observer = await world.client(OBSERVER);
  assert.equal(
    (await observer.replay({ sessionId: id })).map((e) => e.id),
    replayed.map((e) => e.id),
    'the observer replays too',
  );
  assert.equal(await observer.replay({ sessionId: 'ses_nobody' }), []);
});

s("client subscribe - a jump in a session's seq is filled from the stream, in order; late copies are dropped", async ({ world }) => {
  const { engine, log, nc } = await world.engine({ liveCommits: false });
  const id = sessionId('gaps');
  await engine.admit(id, { prompt: 'one two three' });
  await engine.awaitIdle(id);
  const stored = await log.readSession(id);
  assert.ok(stored.length >= 8, `a whole turn is stored (${stored.length} events)`);
  const client = await world.client(CLIENT);
  const seen: LiveMessage[] = [];
  const sub = await client.subscribe({ sessionId: id }, (e) => {
    seen.push(e);
  });
  const fromStart: LiveMessage[] = [];
  const catchUp = await client.subscribe(
    { sessionId: id },
    (e) => {
      fromStart.push(e);
    },
    { afterSeq: 0 },
  );
  // live delivery loses events 3 and 4 and brings 4 late, after 5 (a writer that died, a slow subscriber)
  const bus = new NatsLiveBus(nc);
  const [e1, e2, , e4, e5, ...rest] = stored;
  for (const e of [e1!, e2!, e5!, e4!, ...rest]) bus.publish(e);
  await until(seen, (e) => e.seq === stored.at(-1)!.seq, 'the last event');
  assert.equal(
    seen.map((e) => e.seq),
    stored.map((e) => e.seq),
    'every event once, in order',
  );
  assert.equal(
    seen.map((e) => e.id),
    stored.map((e) => e.id),
  );
  assert.is(sub.stats.backfilled, 2, 'events 3 and 4 read from the stream');
  assert.is(sub.stats.duplicates, 1, 'the late copy of 4 dropped');
  await until(fromStart, (e) => e.seq === stored.at(-1)!.seq, 'the last event (catch-up subscription)');
  assert.equal(
    fromStart.map((e) => e.seq),
    stored.map((e) => e.seq),
    'afterSeq 0: the first live event brought everything before it',
  );
  await catchUp.close();
  const typed = await client
    .subscribe({ sessionId: id, type: 'step.started' }, () => {}, { backfill: true })
    .then(
      () => undefined,
      (e) => e,
    );
  assert.ok(isSessiondError(typed, ErrorCode.InvalidOption) && /backfill needs every event type/.test(typed.message));
});

s(
  'client - a command sent while no worker serves it (workers resubscribing after an outage) is sent again until one does, within noWorkerRetryMs',
  async ({ world }) => {
    const { engine } = await world.engine();
    const client = await world.client(CLIENT, { noWorkerRetryMs: 10_000 });
    const send = client.nc.request.bind(client.nc);
    let attempts = 0;
    client.nc.request = (...args: Parameters<typeof send>) => {
      attempts++;
      return send(...args);
    };
    const id = sessionId('late');
    const admitted = client.admit(id, { prompt: 'is anyone there', id: 'inp_late' });
    await waitFor(() => attempts >= 2, { what: 'the admit sent again after no worker answered' });
    await world.serve(engine);
    const receipt = await admitted;
    assert.equal([receipt.inputId, receipt.created], ['inp_late', true], 'admitted once, by the worker that came');
  },
);

s('client - an admit whose first attempt a worker took but whose reply was lost is sent again and reported as created by this call', async ({ world }) => {
  const { engine } = await world.engine();
  await world.serve(engine);
  const client = await world.client(CLIENT);
  const send = client.nc.request.bind(client.nc);
  let attempts = 0;
  client.nc.request = async (...args: Parameters<typeof send>) => {
    attempts++;
    const reply = await send(...args);
    if (attempts === 1) throw new natsErrors.RequestError('lost', { cause: new natsErrors.TimeoutError() }); // ran, the answer never came
    return reply;
  };
  const id = sessionId('lostreply');
  const receipt = await client.admit(id, { prompt: 'answer lost once', id: 'inp_lost' });
  assert.is(attempts, 2, 'sent again');
  assert.equal([receipt.inputId, receipt.created], ['inp_lost', true], 'the first attempt of this call admitted it');
  const again = await client.admit(id, { prompt: 'answer lost once', id: 'inp_lost' });
  assert.is(again.created, false, 'a later call with the same id is a retry');
  assert.is((await engine.log.readSession(id)).filter((e) => e.type === 'input.admitted').length, 1, 'admitted once');
});

s('client - options and closed clients fail clearly', async ({ world }) => {
  const bad = await (await import('../../src/client/client.ts')).SessiondClient.connect({
    connection: { servers: world.server.url },
    requestTimeoutMs: -1,
  }).then(
    () => undefined,
    (e) => e,
  );
  assert.ok(isSessiondError(bad, ErrorCode.InvalidOption) && /requestTimeoutMs/.test(bad.message));
  const client = await world.client();
  await client.close();
  const closed = await client.status('ses_1').then(
    () => undefined,
    (e) => e,
  );
  assert.ok(isSessiondError(closed, ErrorCode.LogClosed) && /This SessiondClient is closed/.test(closed.message));
  const badId = await (await world.client()).status('ses.bad').then(
    () => undefined,
    (e) => e,
  );
  assert.ok(isSessiondError(badId, ErrorCode.InvalidId));
});

s.run();
