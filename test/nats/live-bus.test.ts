// The live bus on a real nats-server: deltas and committed events (published by their writer) reach wildcard
// subscribers (one session, one type, everything), deltas never reach the durable stream, and the
// wire format is checked on the way in. Waits are polls with deadlines on what arrived.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { jetstreamManager } from '@nats-io/jetstream';
import { ErrorCode, isSessiondError } from '../../src/errors.ts';
import { decodeLiveEvent, encodeLiveEvent, NatsLiveBus, type LiveMessage } from '../../src/nats/live-bus.ts';
import { STREAM_NAME, subjects } from '../../src/nats/subjects.ts';
import { pack } from '../../src/events/codec.ts';
import { CLIENT } from '../../src/testing/nats-server.ts';
import { committed, ev, live } from '../../src/testing/fixtures.ts';
import { collect, natsWorld, sessionId, until, type NatsWorld } from './helpers.ts';

const s = suite<{ world: NatsWorld }>('NATS live bus');
s.before(async (ctx) => {
  ctx.world = await natsWorld();
});
s.after.each(async (ctx) => {
  await ctx.world.reset();
});
s.after(async (ctx) => {
  await ctx.world.dispose();
});

const settled = (id: string) => (e: LiveMessage) => e.sessionId === id && e.type === 'execution.settled';
const committedIds = (events: LiveMessage[], id: string) => events.filter((e) => e.sessionId === id && e.seq !== undefined).map((e) => e.id);

s('live bus - wildcard subscribers get one session, one type, or everything; committed events carry seq and position', async ({ world }) => {
  const { engine, log } = await world.engine();
  const watcher = await world.connect(CLIENT);
  const a = sessionId('a');
  const b = sessionId('b');
  const oneSession = await collect(watcher, subjects.liveFilter({ sessionId: a }));
  const oneType = await collect(watcher, subjects.liveFilter({ type: 'step.started' }));
  const family = await collect(watcher, subjects.liveFilter({ type: 'execution.*' }));
  const everything = await collect(watcher, subjects.allLive);

  await engine.admit(a, { prompt: 'alpha beta gamma' });
  await engine.admit(b, { prompt: 'delta epsilon zeta' });
  await until(everything, settled(a), `${a} settled on the live bus`);
  await until(everything, settled(b), `${b} settled on the live bus`);
  await until(oneSession, settled(a), `${a} settled on its session subject`);

  assert.ok(
    oneSession.every((e) => e.sessionId === a),
    'one session: only that session',
  );
  assert.ok(
    oneSession.some((e) => e.type === 'text.delta'),
    'one session: deltas included',
  );
  await until(oneType, (e) => e.sessionId === b && (e.payload as { step: number }).step === 2, 'the last step.started of b');
  assert.ok(
    oneType.every((e) => e.type === 'step.started'),
    'one type: only step.started',
  );
  assert.equal(new Set(oneType.map((e) => e.sessionId)), new Set([a, b]), 'one type: across sessions');
  assert.is(oneType.length, 6, 'three steps per session (echo runner)');
  await until(family, settled(b), 'execution.settled of b on the family subject');
  assert.ok(
    family.every((e) => e.type.startsWith('execution.')),
    'a family: only execution.*',
  );

  // the committed events on the live bus are exactly the log's, in order, with seq and position
  for (const id of [a, b]) {
    const stored = await log.readSession(id);
    assert.equal(
      committedIds(everything, id),
      stored.map((e) => e.id),
      `${id}: live committed events = the log`,
    );
    const live = everything.filter((e) => e.sessionId === id && e.seq !== undefined);
    assert.equal(
      live.map((e) => [e.seq, e.position]),
      stored.map((e) => [e.seq, e.position]),
    );
  }
  const deltas = everything.filter((e) => e.type === 'text.delta');
  assert.ok(deltas.length >= 6 && deltas.every((e) => e.seq === undefined && e.position === undefined), 'deltas are live-only: no seq, no position');
  assert.is(
    deltas
      .filter((e) => e.sessionId === a)
      .map((e) => (e.payload as { delta: string }).delta)
      .join('')
      .replace(/\s/g, ''),
    'alphabetagamma',
  );
});

s('live bus - deltas never reach the durable stream, which stores only sessiond.events subjects', async ({ world }) => {
  const { engine, log, nc } = await world.engine({ liveCommits: false });
  const everything = await collect(await world.connect(CLIENT), subjects.allLive);
  const id = sessionId('d');
  await engine.admit(id, { prompt: 'one two three four' });
  await engine.awaitIdle(id);
  await until(everything, (e) => e.sessionId === id && e.type === 'text.delta', 'a delta on the live bus');
  const stored = await log.readAll();
  assert.ok(stored.length > 0);
  assert.not.ok(
    stored.some((e) => e.type === 'text.delta'),
    'no text.delta in the log',
  );
  assert.ok(
    stored.some((e) => e.sessionId === id && e.type === 'text.completed'),
    'the completed text is stored',
  );
  const info = await (await jetstreamManager(nc)).streams.info(STREAM_NAME, { subjects_filter: '>' });
  const stored_subjects = Object.keys(info.state.subjects ?? {});
  assert.ok(stored_subjects.length > 0 && stored_subjects.every((sub) => sub.startsWith('sessiond.events.')), `stream subjects: ${stored_subjects.join(', ')}`);
  assert.not.ok(
    everything.some((e) => e.seq !== undefined),
    'commits not published live: only deltas were',
  );
});

s('live bus - publishing never throws into the runner, even on a closed connection', async ({ world }) => {
  const nc = await world.connect();
  const bus = new NatsLiveBus(nc, { onError: () => {} });
  const event = live(ev('text.delta', { executionId: 'exe_1', messageId: 'msg_1', partId: 'prt_1', delta: 'x' }), {
    id: 'evt_x',
    sessionId: 'ses_closed',
    time: 1,
  });
  bus.publish(event);
  await nc.close();
  bus.publish(event);
  bus.publish({ ...event, sessionId: 'bad.id' });
  assert.equal(bus.stats, { published: 1, dropped: 2 });
});

s('live wire format - round trip, and every kind of bad message refused with a clear code', () => {
  const event = committed(ev('step.started', { executionId: 'exe_1', messageId: 'msg_1', step: 0 }), {
    id: 'evt_1',
    sessionId: 'ses_w',
    seq: 3,
    time: 5,
    position: 9,
  });
  const subject = subjects.live('ses_w', 'step.started');
  assert.equal(decodeLiveEvent(encodeLiveEvent(event), subject), event);
  const refused = (data: Uint8Array, on = subject) => {
    try {
      decodeLiveEvent(data, on);
      return undefined;
    } catch (err) {
      return err;
    }
  };
  const cases: [string, Uint8Array, string, string?][] = [
    ['garbage bytes', new Uint8Array([0xc1, 0xff, 0x00]), ErrorCode.DecodeFailed],
    ['not a map', pack([1, 2]), ErrorCode.DecodeFailed],
    ['unknown type', pack({ ...event, type: 'step.exploded' }), ErrorCode.UnknownEventType],
    ['bad payload', pack({ ...event, payload: { step: -1 } }), ErrorCode.InvalidPayload],
    ['newer version', pack({ ...event, version: 2 }), ErrorCode.UnsupportedEventVersion],
    ['wrong subject', encodeLiveEvent(event), ErrorCode.DecodeFailed, subjects.live('ses_other', 'step.started')],
  ];
  for (const [what, data, code, on] of cases) {
    const err = refused(data, on);
    assert.ok(isSessiondError(err, code as never), `${what}: ${code}, got ${String(err)}`);
    assert.match((err as Error).message, subject.slice(0, 14), `${what}: the message names the subject`);
  }
  const withSeq = refused(pack({ ...event, payload: {} })) as { details: { seq?: number } };
  assert.is(withSeq.details.seq, 3, 'the seq is reported when readable');
  assert.throws(() => subjects.liveFilter({ type: 'step.>' }), /Invalid live event type filter/);
  assert.throws(() => subjects.liveFilter({ sessionId: 'a.b' }), /Invalid session id/);
  assert.is(subjects.liveFilter({ type: 'tool.*' }), 'sessiond.live.*.tool.*');
});

s.run();
