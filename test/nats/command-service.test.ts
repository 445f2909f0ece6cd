// Commands over NATS request/reply against real engines (JetStream log, echo runner): each verb
// round-trips through the typed client, every bad input gets a clear error reply (never a crash),
// a request with no worker or no reply fails clearly, and the queue group gives one reply per request.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { NatsConnection } from '@nats-io/transport-node';
import { ErrorCode } from '../../src/errors.ts';
import { DEFAULT_MAX_PROMPT_BYTES } from '../../src/input/admit.ts';
import {
  DEFAULT_QUEUE_PLACES,
  MAX_EXTRA_PLACES,
  QUIET_ARRIVALS,
  STUCK_MS,
  commandAnswerer,
  placesWanted,
  startCommandService,
  type CommandTarget,
} from '../../src/nats/command-service.ts';
import { CommandFailureCode, decodeJson, isCommandError, type CommandFailure } from '../../src/nats/command-protocol.ts';
import { COMMAND_QUEUE, subjects } from '../../src/nats/subjects.ts';
import type { Runner } from '../../src/runner/types.ts';
import { CLIENT, COMMANDS } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { natsWorld, sessionId, type NatsWorld } from './helpers.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';

/** A target method a test does not call. */
const unused = async (): Promise<never> => {
  throw new Error('unused');
};

const s = suite<{ world: NatsWorld }>('NATS commands');
s.before(async (ctx) => {
  ctx.world = await natsWorld();
});
s.after.each(async (ctx) => {
  await ctx.world.reset();
});
s.after(async (ctx) => {
  await ctx.world.dispose();
});

async function serve(world: NatsWorld, options: { runner?: Runner } = {}) {
  const opened = await world.engine(options);
  const errors: unknown[] = [];
  const service = await world.serve(opened.engine, { onError: (e) => errors.push(e) });
  return { ...opened, service, errors };
}

/** A raw request as the client user, its reply decoded. */
async function raw(
  nc: NatsConnection,
  subject: string,
  body: Uint8Array | string,
): Promise<{ ok: boolean; error?: { code: CommandFailure; message: string } }> {
  const msg = await nc.request(subject, typeof body === 'string' ? new TextEncoder().encode(body) : body, { timeout: 5000 });
  return decodeJson(msg.data) as never;
}

async function failure(p: Promise<unknown>): Promise<{ failure: CommandFailure; message: string }> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(isCommandError(err), `expected a CommandError, got ${String(err)}`);
  return err;
}

s('commands - admit, status, wake and cancel round-trip through a worker', async ({ world }) => {
  await serve(world);
  const client = await world.client();
  const id = sessionId('rt');
  const receipt = await client.admit(id, { prompt: 'hello over nats', id: 'inp_rt1' });
  assert.equal(receipt, { sessionId: id, inputId: 'inp_rt1', admittedSeq: 1, created: true, wake: true });
  await waitFor(async () => (await client.status(id)).state === 'settled', { timeoutMs: 10_000, what: 'the turn to settle' });
  const status = await client.status(id);
  assert.is(status.sessionId, id);
  assert.ok(status.seq > 5, `seq ${status.seq}`);
  assert.is(status.execution?.outcome, 'succeeded');
  assert.equal(status.pending, []);
  const again = await client.admit(id, { prompt: 'hello over nats', id: 'inp_rt1' });
  assert.equal({ ...again, created: true }, receipt, 'an exact retry returns the same receipt');
  assert.is(again.created, false);
  assert.equal(await client.wake(id), { status: 'nothing_pending' });
  const cancel = await client.cancel(id, 'nothing to cancel');
  assert.is(cancel.cancelled, false);
  const queued = await client.admit(id, { prompt: 'later', wake: false });
  assert.match(queued.inputId, /^inp_/, 'the client picked an input id');
  assert.equal(
    (await client.status(id)).pending.map((p) => p.inputId),
    [queued.inputId],
  );
});

s('commands - cancel stops a turn running on the worker', async ({ world }) => {
  const blocking: Runner = async (ctx) => {
    await ctx.phase('unknown');
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
  };
  const { engine } = await serve(world, { runner: blocking });
  const client = await world.client();
  const id = sessionId('cancel');
  await client.admit(id, { prompt: 'run until cancelled' });
  await waitFor(async () => (await client.status(id)).execution?.phase === 'unknown', { timeoutMs: 10_000, what: 'the turn to start' });
  const result = await client.cancel(id, 'user pressed stop');
  assert.ok(result.cancelled, JSON.stringify(result));
  await engine.awaitIdle(id);
  const status = await client.status(id);
  assert.is(status.execution?.outcome, 'cancelled');
});

s('commands - bad input gets an error reply naming the problem, and the worker keeps serving', async ({ world }) => {
  const { service, errors } = await serve(world);
  const client = await world.client();
  const nc = await world.connect(CLIENT);

  for (const verb of ['status', 'wake', 'cancel'] as const) {
    const unknown = await failure(verb === 'status' ? client.status('ses_nobody') : verb === 'wake' ? client.wake('ses_nobody') : client.cancel('ses_nobody'));
    assert.is(unknown.failure, CommandFailureCode.UnknownSession, verb);
    assert.match(unknown.message, `Session ses_nobody has no events, so there is nothing to ${verb === 'status' ? 'show' : verb}`);
  }
  const badId = await raw(nc, subjects.command('status'), JSON.stringify({ sessionId: 'ses.with.dots' }));
  assert.is(badId.error?.code, ErrorCode.InvalidId);
  assert.match(badId.error!.message, 'Invalid session id "ses.with.dots"');
  const badInputId = await raw(nc, subjects.command('admit'), JSON.stringify({ sessionId: 'ses_ok', prompt: 'x', id: 'inp 1' }));
  assert.is(badInputId.error?.code, ErrorCode.InvalidId);
  assert.match(badInputId.error!.message, 'Invalid input id');

  const huge = await failure(client.admit(sessionId('big'), { prompt: 'x'.repeat(DEFAULT_MAX_PROMPT_BYTES + 1) }));
  assert.is(huge.failure, ErrorCode.InvalidOption);
  assert.match(huge.message, `over the limit of ${DEFAULT_MAX_PROMPT_BYTES} bytes`);

  const cases: [string, string, CommandFailure, string][] = [
    ['admit', '{"sessionId": "ses_1", "prompt": ', CommandFailureCode.BadRequest, 'not valid UTF-8 JSON'],
    ['status', '[1,2]', CommandFailureCode.BadRequest, 'must be a JSON object'],
    ['status', '{}', CommandFailureCode.BadRequest, 'has no sessionId'],
    ['admit', '{"sessionId":"ses_1","promt":"typo"}', CommandFailureCode.BadRequest, 'unknown field "promt"'],
    ['admit', '{"sessionId":"ses_1"}', ErrorCode.InvalidOption, 'prompt must be a string'],
    ['admit', '{"sessionId":"ses_1","prompt":"x","delivery":"later"}', ErrorCode.InvalidOption, 'delivery must be "steer" or "queue"'],
    ['cancel', `{"sessionId":"ses_1","reason":${JSON.stringify('r'.repeat(1001))}}`, CommandFailureCode.BadRequest, 'at most 1000 characters'],
    ['frobnicate', '{"sessionId":"ses_1"}', CommandFailureCode.UnknownCommand, 'send one of sessiond.cmd.admit'],
  ];
  for (const [verb, body, code, text] of cases) {
    const reply = await raw(nc, `sessiond.cmd.${verb}`, body);
    assert.is(reply.ok, false, `${verb} ${body.slice(0, 40)}`);
    assert.is(reply.error?.code, code, `${verb} ${body.slice(0, 40)}: ${reply.error?.message}`);
    assert.match(reply.error!.message, text);
  }
  const invalidUtf8 = await raw(nc, subjects.command('status'), new Uint8Array([0xff, 0xfe, 0x7b]));
  assert.is(invalidUtf8.error?.code, CommandFailureCode.BadRequest);
  assert.equal(errors, [], 'bad input is not an internal error');
  assert.ok((service.stats.failures.bad_request ?? 0) >= 5);
  const id = sessionId('after');
  assert.is((await client.admit(id, { prompt: 'still serving', wake: false })).admittedSeq, 1, 'the worker still serves');
});

s('commands - an unexpected engine failure is answered as internal and reported, not fatal', async ({ world }) => {
  const nc = await world.connect(COMMANDS);
  let calls = 0;
  const target: CommandTarget = {
    approve: unused,
    deny: unused,
    resolve: unused,
    tag: unused,
    budget: unused,
    list: unused,
    fork: unused,
    events: unused,
    admit: async () => {
      throw new Error('disk on fire');
    },
    wake: async () => ({ status: 'requested' }),
    cancel: async () => ({ cancelled: false, reason: 'not_running', message: 'x' }) as never,
    dropPending: async () => {
      throw new Error('unused');
    },
    status: async (id) => {
      const seq = ++calls;
      return { sessionId: id, state: 'idle', seq, pending: [], execution: null } as never;
    },
  };
  const errors: unknown[] = [];
  const service = startCommandService(nc, target, { onError: (e) => errors.push(e) });
  world.defer(() => service.close(), "the test's command service");
  const client = await world.client();
  const err = await failure(client.admit('ses_x', { prompt: 'p' }));
  assert.is(err.failure, CommandFailureCode.Internal);
  assert.match(err.message, 'The worker failed to run admit: disk on fire');
  assert.is(errors.length, 1);
  assert.is((await client.status('ses_x')).state, 'idle', 'still serving');
  assert.equal(await client.wake('ses_x'), { status: 'requested' }, "the target's wake result is the reply");
});

s('commands - no worker, or no reply in time, fail clearly', async ({ world }) => {
  const client = await world.client(CLIENT, { requestTimeoutMs: 300 });
  const none = await failure(client.status('ses_1'));
  assert.is(none.failure, CommandFailureCode.NoWorker);
  assert.match(none.message, 'No sessiond worker is serving sessiond.cmd.status');
  assert.match(none.message, 'sessiond start --nats');
  // something subscribed that never answers
  const silent = await world.connect(COMMANDS);
  silent.subscribe(subjects.command('admit'), { callback: () => {} });
  await silent.flush();
  const slow = await failure(client.admit('ses_1', { prompt: 'p', id: 'inp_retry' }));
  assert.is(slow.failure, CommandFailureCode.Timeout);
  assert.match(slow.message, 'within 300 ms');
  assert.match(slow.message, 'admit again with the same input id inp_retry');
});

s('commands - with two workers in the queue group, each request is answered by exactly one', async ({ world }) => {
  const one = await serve(world);
  const two = await serve(world);
  const client = await world.client();
  const id = sessionId('q');
  await client.admit(id, { prompt: 'shared', wake: false });
  const n = 40;
  const replies = await Promise.all(Array.from({ length: n }, () => client.status(id)));
  assert.ok(replies.every((r) => r.seq === 1 && r.pending.length === 1));
  const handled = [one.service.stats.requests, two.service.stats.requests];
  assert.is(handled[0]! + handled[1]!, n + 1, `each request handled once (${handled.join(' + ')})`);
  assert.ok(
    handled.every((h) => h > 0),
    `both workers took requests (${handled.join(', ')})`,
  );
  // a plain (non-queue) listener sees every request once: nothing is sent twice
  const tap = await world.connect(COMMANDS);
  let seen = 0;
  tap.subscribe(subjects.command('status'), {
    callback: () => {
      seen++;
    },
  });
  await tap.flush();
  await Promise.all(Array.from({ length: 5 }, () => client.status(id)));
  await tap.flush();
  assert.is(seen, 5);
  assert.is(one.service.stats.requests + two.service.stats.requests, n + 6);
});

s('commands - close answers requests in flight and stops taking new ones', async ({ world }) => {
  let release!: () => void;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  let entered!: () => void;
  const inside = new Promise<void>((r) => {
    entered = r;
  });
  const nc = await world.connect(COMMANDS);
  const target: CommandTarget = {
    approve: unused,
    deny: unused,
    resolve: unused,
    tag: unused,
    budget: unused,
    list: unused,
    fork: unused,
    events: unused,
    admit: async () => {
      throw new Error('unused');
    },
    wake: async () => {
      throw new Error('unused');
    },
    cancel: async () => {
      throw new Error('unused');
    },
    dropPending: async () => {
      throw new Error('unused');
    },
    status: async (id) => {
      entered();
      await gate;
      return { sessionId: id, state: 'idle', seq: 1, pending: [], execution: null } as never;
    },
  };
  const service = startCommandService(nc, target);
  const client = await world.client(CLIENT, { requestTimeoutMs: 2000 });
  const pending = client.status('ses_slow');
  await inside;
  const closing = service.close();
  release();
  await closing;
  assert.is((await pending).seq, 1, 'the request in flight was answered');
  assert.is((await failure(client.status('ses_slow'))).failure, CommandFailureCode.NoWorker, 'closed: no longer serving');
});

/** The connection's subscriptions on the command subjects, as the server's monitoring port lists them (`max` 0: no limit). */
async function commandSubs(world: NatsWorld, nc: NatsConnection): Promise<{ qgroup?: string; max?: number }[]> {
  const url = `http://127.0.0.1:${world.server.monitorPort}/connz?subs=detail&cid=${nc.info!.client_id}`;
  const connz = (await (await fetch(url, { signal: AbortSignal.timeout(2_000) })).json()) as {
    connections: { subscriptions_list_detail?: { subject: string; qgroup?: string; max?: number }[] }[];
  };
  return (connz.connections[0]?.subscriptions_list_detail ?? []).filter((sub) => sub.subject === subjects.allCommands);
}

/** How many places in the command queue group the connection holds; each must be good for one request. */
async function commandPlaces(world: NatsWorld, nc: NatsConnection): Promise<number> {
  const subs = await commandSubs(world, nc);
  assert.ok(
    subs.every((sub) => sub.qgroup === COMMAND_QUEUE && sub.max === 1),
    `places good for one request each: ${JSON.stringify(subs)}`,
  );
  return subs.length;
}

s(
  'commands - a request a frozen queue member took is sent again after attemptTimeoutMs and answered by a worker; a worker renews each place it uses',
  async ({ world }) => {
    const { engine } = await world.engine();
    const nc = await world.connect(COMMANDS);
    const service = startCommandService(nc, engine);
    world.defer(() => service.close(), "the test's command service");
    const client = await world.client(CLIENT, { attemptTimeoutMs: 250 });
    const id = sessionId('frozen');
    await client.admit(id, { prompt: 'p', id: 'inp_frozen', wake: false });
    // a member that stopped running: it holds one place (the server ends it after one request) and never answers
    const frozen = await world.connect(COMMANDS);
    let held = 0;
    frozen.subscribe(subjects.allCommands, {
      queue: COMMAND_QUEUE,
      max: 1,
      callback: () => {
        held++;
      },
    });
    await frozen.flush();
    let sent = 0;
    await waitFor(
      async () => {
        sent++;
        assert.is((await client.status(id)).seq, 1);
        return held === 1;
      },
      { timeoutMs: 20_000, what: 'a request taken by the frozen member' },
    );
    assert.is(await commandPlaces(world, frozen), 0, "the server ended the frozen member's place after one request");
    for (let i = 0; i < 5; i++) assert.is((await client.status(id)).seq, 1);
    const again = await client.admit(id, { prompt: 'p', id: 'inp_frozen', wake: false });
    assert.equal([again.inputId, again.created], ['inp_frozen', false], 'admitted once, however often it was sent');
    assert.is(held, 1, 'nothing more reached the frozen member');
    assert.is(service.stats.requests, sent + 7, 'the worker answered every command once, the held one included');
    // one more place per request taken in the last PLACE_WINDOW_MS, given back after
    await waitFor(async () => (await commandPlaces(world, nc)) === DEFAULT_QUEUE_PLACES, {
      timeoutMs: 10_000,
      what: 'the worker to hold its places (and no more) once the requests are over',
    });
  },
);

s(
  'commands - a worker taking requests at a quiet rate (up to QUIET_ARRIVALS a second) holds only its idle places: frozen then, it would keep at most three requests',
  async ({ world }) => {
    const { engine } = await world.engine();
    const nc = await world.connect(COMMANDS);
    const service = startCommandService(nc, engine);
    world.defer(() => service.close(), "the test's command service");
    const client = await world.client(CLIENT);
    const id = sessionId('quiet');
    await client.admit(id, { prompt: 'p', id: 'inp_quiet', wake: false });
    for (let i = 1; i < QUIET_ARRIVALS; i++) assert.is((await client.status(id)).seq, 1);
    assert.is(service.stats.requests, QUIET_ARRIVALS);
    // before, each request of the last second added a place: a worker frozen now held 3 + 32, and
    // the server chose it for 35 of every 38 resends (a Python client's admit failed after 5 of them)
    // (one more at most: the place of the last request, held until the worker has finished with it)
    const held = await commandPlaces(world, nc);
    assert.ok(held <= DEFAULT_QUEUE_PLACES + 1, `no place was added for quiet traffic: ${held}`);
  },
);

s(
  'places - quiet traffic adds none; a burst and requests in flight add one each; a stuck worker (a request waiting STUCK_MS, nothing answered) holds its idle places only',
  () => {
    const now = 100_000;
    const load = (arrivals: number, inFlight: number[], lastAnswer: number) =>
      placesWanted(3, { arrivals, inFlight: inFlight.length, oldest: inFlight[0], lastAnswer, now });
    assert.is(load(QUIET_ARRIVALS, [], now - 5), 3, 'quiet: a frozen worker would hold three');
    assert.is(load(QUIET_ARRIVALS + 10, [now - 5, now - 1], now - 1), 3 + 10 + 2, 'a burst');
    // before, requests hanging in flight added places for good: a worker whose log was out of reach
    // held 3 + all it had taken and drew more and more of the resends (CI: cluster failover (c))
    const hanging = Array.from({ length: 40 }, (_, i) => now - STUCK_MS - i);
    assert.is(load(50, hanging, now - STUCK_MS - 1), 3, 'stuck: nothing answered while a request waited');
    assert.is(load(50, hanging, now - 10), 3 + 18 + 40, 'busy but answering: it keeps them');
    assert.is(load(10_000, [], now), 3 + MAX_EXTRA_PLACES, 'at most MAX_EXTRA_PLACES more');
  },
);

s('commands - events: a page is cut to fit max_payload and says more follows; an event too big for any reply is refused, naming it', async () => {
  const event = (seq: number, bytes: number): SessionEvent =>
    ({
      id: `evt_${seq}`,
      type: 'text.completed',
      version: 1,
      sessionId: 'ses_big',
      seq,
      time: 1,
      payload: { text: 'x'.repeat(bytes) },
    }) as unknown as SessionEvent;
  const history = [event(1, 300), event(2, 300), event(3, 300), event(4, 2000)];
  const asked: unknown[] = [];
  const target = {
    events: async (_id: string, o?: { afterSeq?: number; limit?: number }) => {
      asked.push(o);
      return history.filter((e) => e.seq > (o?.afterSeq ?? 0)).slice(0, o?.limit);
    },
  } as unknown as CommandTarget;
  const answer = commandAnswerer(target, {
    maxPromptBytes: DEFAULT_MAX_PROMPT_BYTES,
    onError: () => {},
    stats: { requests: 0, refusedReplies: 0, failures: {} },
  });
  const ask = async (body: object, maxPayload: number) =>
    decodeJson(await answer(subjects.command('events'), new TextEncoder().encode(JSON.stringify(body)), maxPayload)) as {
      ok: boolean;
      events?: SessionEvent[];
      more?: boolean;
      error?: { code: string; message: string };
    };
  const first = await ask({ sessionId: 'ses_big' }, 1000);
  assert.equal([first.ok, first.events?.map((e) => e.seq), first.more], [true, [1, 2], true], 'two of about 400 bytes fit in 1,000');
  const next = await ask({ sessionId: 'ses_big', afterSeq: 2, limit: 1 }, 100_000);
  assert.equal([next.events?.map((e) => e.seq), next.more], [[3], true], 'limit 1: one, and more follow');
  assert.equal(asked.at(-1), { afterSeq: 2, limit: 2 }, 'one more than the limit is read, to know');
  const end = await ask({ sessionId: 'ses_big', afterSeq: 3 }, 100_000);
  assert.equal([end.events?.map((e) => e.seq), end.more], [[4], false]);
  const big = await ask({ sessionId: 'ses_big', afterSeq: 3 }, 1000);
  assert.equal([big.ok, big.error?.code], [false, 'payload_too_large']);
  assert.match(big.error!.message, 'Event 4 of session ses_big');
  const bad = await ask({ sessionId: 'ses_big', limit: 100_000 }, 100_000);
  assert.equal([bad.ok, bad.error?.code], [false, CommandFailureCode.BadRequest]);
});

s('commands - a cancel sent again after its first attempt cancelled the turn (the reply was late) still reports the cancellation', async ({ world }) => {
  const blocking: Runner = async (ctx) => {
    await ctx.phase('unknown');
    await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
  };
  const { engine } = await world.engine({ runner: blocking });
  let answerFirst!: () => void;
  const secondDone = new Promise<void>((r) => {
    answerFirst = r;
  });
  let calls = 0;
  const target: CommandTarget = {
    approve: (id, callId, o) => engine.approve(id, callId, o),
    deny: (id, callId, o) => engine.deny(id, callId, o),
    resolve: (id, name, o) => engine.resolve(id, name, o),
    tag: (id, tags) => engine.tag(id, tags),
    budget: (id, request) => engine.budget(id, request),
    list: (filter) => engine.list(filter),
    fork: (source, id, o) => engine.fork(source, id, o),
    events: (id, o) => engine.events(id, o),
    admit: (id, request) => engine.admit(id, request),
    wake: (id) => engine.wake(id),
    status: (id) => engine.status(id),
    dropPending: (id, request) => engine.dropPending(id, request),
    cancel: async (id, reason) => {
      const n = ++calls;
      const result = await engine.cancel(id, reason);
      if (n === 1)
        await secondDone; // the first attempt's reply comes after the client sent it again
      else answerFirst();
      return result;
    },
  };
  await world.serve(target);
  const client = await world.client(CLIENT, { attemptTimeoutMs: 300 });
  const id = sessionId('recancel');
  await client.admit(id, { prompt: 'run until cancelled' });
  await waitFor(async () => (await client.status(id)).execution?.phase === 'unknown', { timeoutMs: 10_000, what: 'the turn to start' });
  const result = await client.cancel(id, 'stop');
  assert.is(calls, 2, 'sent twice');
  assert.ok(result.cancelled, JSON.stringify(result));
  assert.is(result.cancelled && result.executionId, (await client.status(id)).execution?.id);
});

s('commands - after the server restarts, a worker opens its places afresh (one request each again) and serves', async ({ world }) => {
  const { engine } = await world.engine();
  const nc = await world.connect(COMMANDS);
  const service = startCommandService(nc, engine);
  world.defer(() => service.close(), "the test's command service");
  const client = await world.client();
  const id = sessionId('restart');
  await client.admit(id, { prompt: 'before', id: 'inp_before', wake: false });
  await world.server.restart();
  // nats.js resubscribes without the one-request limit; the service replaces those subscriptions
  await waitFor(
    async () => {
      const subs = await commandSubs(world, nc).catch(() => []);
      return subs.length === DEFAULT_QUEUE_PLACES && subs.every((sub) => sub.max === 1);
    },
    { timeoutMs: 20_000, what: `${DEFAULT_QUEUE_PLACES} places good for one request each after the restart` },
  );
  for (let i = 0; i < 5; i++) assert.is((await client.status(id)).seq, 1);
  await waitFor(async () => (await commandPlaces(world, nc)) === DEFAULT_QUEUE_PLACES, { timeoutMs: 10_000, what: 'the places back to the idle count' });
});

s.run();
