/**
 * The `Sessions` contract, run against every implementation (engine, log at rest with a worker, NATS
 * client with a worker). `settle(sessionId)` waits until the session's pending inputs have run.
 *
 *   sessionsContract('engine', async () => ({ sessions, settle, cleanup })).run();
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode, ErrorKind, isSessiondError } from '../errors.ts';
import type { SessionEvent } from '../events/envelope.ts';
import type { PromptPart } from '../events/catalog.ts';
import type { Sessions } from '../sessions/sessions.ts';
import { uniqueId } from './fixtures.ts';
import { waitFor } from './wait.ts';

export interface SessionsFixture {
  sessions: Sessions;
  /** Resolves once the session's pending inputs have run and its turn settled. */
  settle: (sessionId: string) => Promise<void>;
  cleanup: () => Promise<void>;
  /**
   * False for an implementation that runs no turns and reaches no process that does (a log at
   * rest): its `wake` of inputs admitted without a wake is refused, saying where to wake them.
   */
  wakeRuns?: boolean;
}

async function rejected(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

export function sessionsContract(name: string, open: () => Promise<SessionsFixture>) {
  const s = suite<{ fx: SessionsFixture }>(`Sessions contract (${name})`, {} as { fx: SessionsFixture });
  s.before.each(async (ctx) => {
    ctx.fx = await open();
  });
  s.after.each(async (ctx) => {
    await ctx.fx.cleanup();
  });

  s('a session with no events: status, wake, cancel, dropPending, approve, deny and resolve reject with not_found, naming it', async ({ fx }) => {
    const id = uniqueId('ses_none');
    for (const [verb, call] of [
      ['status', () => fx.sessions.status(id)],
      ['wake', () => fx.sessions.wake(id)],
      ['cancel', () => fx.sessions.cancel(id)],
      ['dropPending', () => fx.sessions.dropPending(id)],
      ['approve', () => fx.sessions.approve(id, 'call_1')],
      ['deny', () => fx.sessions.deny(id, 'call_1')],
      ['resolve', () => fx.sessions.resolve(id, 'answer', { data: 1 })],
    ] as const) {
      const err = await rejected(call());
      assert.ok(isSessiondError(err), `${verb}: a SessiondError`);
      assert.is(err.code, ErrorCode.NotFound, verb);
      assert.is(err.kind, ErrorKind.NotFound, verb);
      assert.match(err.message, id, `${verb} names the session`);
    }
  });

  s('an invalid session id is refused as invalid input before anything is sent', async ({ fx }) => {
    const err = await rejected(fx.sessions.admit('not a valid id!', { prompt: 'p' }));
    assert.ok(isSessiondError(err));
    assert.is(err.kind, ErrorKind.InvalidInput);
  });

  s('admit is idempotent by input id; the turn runs once and status says settled', async ({ fx }) => {
    const id = uniqueId('ses_admit');
    const inputId = uniqueId('inp');
    const first = await fx.sessions.admit(id, { prompt: 'hello', id: inputId });
    assert.equal({ ...first, admittedSeq: 0 }, { sessionId: id, inputId, admittedSeq: 0, created: true, wake: true });
    assert.ok(first.admittedSeq >= 1);
    const again = await fx.sessions.admit(id, { prompt: 'hello', id: inputId });
    assert.is(again.created, false, 'the same input id again is not a second input');
    assert.is(again.admittedSeq, first.admittedSeq);
    await fx.settle(id);
    const status = await fx.sessions.status(id);
    assert.is(status.sessionId, id);
    assert.is(status.state, 'settled');
    assert.is(status.outcome, 'succeeded');
    assert.is(status.owner, null, 'nobody owns a settled session');
    assert.is(status.pendingCount, 0);
    assert.is(status.executions, 1, 'one turn for the two admissions of one input');
    assert.ok(status.execution !== null);
    assert.equal(status.execution.inputIds, [inputId]);
    assert.is(status.execution.inputCount, 1);
    assert.ok(status.seq > first.admittedSeq);
  });

  s('a prompt of parts (text, an image by URL and by bytes, JSON) is admitted whole, runs as its text, and resends by content', async ({ fx }) => {
    const id = uniqueId('ses_parts');
    const inputId = uniqueId('inp');
    const prompt = [
      { type: 'text', text: 'what is in these?' },
      { type: 'image', url: 'https://203.0.113.10/cat.png' }, // a documentation address: no DNS needed
      { type: 'image', data: Buffer.from('not really a png').toString('base64'), mediaType: 'image/png' },
      { type: 'json', value: { order: 42, lines: [{ sku: 'A-1', qty: 2 }] } },
    ] satisfies PromptPart[];
    const first = await fx.sessions.admit(id, { prompt, id: inputId });
    assert.is(first.created, true);
    // the same parts with their keys in another order are the same prompt (a client's maps may order keys differently)
    const reordered = prompt.map((p) => Object.fromEntries(Object.entries(p).reverse())) as PromptPart[];
    assert.is((await fx.sessions.admit(id, { prompt: reordered, id: inputId })).created, false, 'an exact resend, keys in any order');
    const conflict = await rejected(fx.sessions.admit(id, { prompt: prompt.slice(0, 1), id: inputId }));
    assert.ok(isSessiondError(conflict));
    assert.is(conflict.code, ErrorCode.InputConflict, 'other parts under the same input id');
    await fx.settle(id);
    const seen: SessionEvent[] = [];
    const sub = await fx.sessions.follow(id, (e) => {
      seen.push(e);
    });
    const last = (await fx.sessions.status(id)).seq;
    await waitFor(() => seen.length >= last, { timeoutMs: 10_000, what: `events up to seq ${last}` });
    await sub.close();
    const admitted = seen.find((e) => e.type === 'input.admitted') as SessionEvent<'input.admitted'>;
    assert.equal(admitted.payload.prompt, prompt, 'the log holds the parts as sent');
    const text = seen.filter((e) => e.type === 'text.completed').map((e) => (e as SessionEvent<'text.completed'>).payload.text);
    assert.match(text.join(' '), 'what', 'the echo runner read the text form');
    for (const [bad, why] of [
      [[], 'no parts'],
      [[{ type: 'image' }], 'an image is'],
      [[{ type: 'audio', url: 'https://x' }], 'type must be'],
      [[{ type: 'image', data: 'not base64!', mediaType: 'image/png' }], 'an image is'],
      [[{ type: 'text', text: 'x', extra: 1 }], 'a text part is'],
    ] as const) {
      const err = await rejected(fx.sessions.admit(id, { prompt: bad as never }));
      assert.ok(isSessiondError(err), why);
      assert.is(err.kind, ErrorKind.InvalidInput, why);
      assert.match(err.message, why);
    }
  });

  s(
    'fork starts a new session with the conversation up to a settled point; sent again it answers created false; inside a turn it is refused',
    async ({ fx }) => {
      const source = uniqueId('ses_src');
      const fork = uniqueId('ses_fork');
      await fx.sessions.admit(source, { prompt: 'the first question' });
      await fx.settle(source);
      const head = (await fx.sessions.status(source)).seq;
      const made = await fx.sessions.fork(source, fork, { tags: { branch: 'b' } });
      assert.equal({ ...made, items: 0 }, { sessionId: fork, from: { sessionId: source, seq: head }, seq: 1, created: true, items: 0 });
      assert.ok(made.items >= 2, 'the prompt and the answer');
      assert.is((await fx.sessions.fork(source, fork)).created, false, 'the same fork again');
      const status = await fx.sessions.status(fork);
      assert.equal([status.state, status.seq, status.forkedFrom, status.tags], ['idle', 1, { sessionId: source, seq: head }, { branch: 'b' }]);
      const seen: SessionEvent[] = [];
      const sub = await fx.sessions.follow(fork, (e) => {
        seen.push(e);
      });
      await waitFor(() => seen.length >= 1, { timeoutMs: 10_000, what: 'the fork event' });
      await sub.close();
      const forked = seen[0] as SessionEvent<'session.forked'>;
      assert.is(forked.type, 'session.forked');
      const [prompt] = forked.payload.transcript;
      assert.equal(prompt?.type === 'user' && [prompt.text, prompt.delivery], ['the first question', 'queue'], "the source's prompt comes first");
      await fx.sessions.admit(fork, { prompt: 'another answer, please' });
      await fx.settle(fork);
      assert.is((await fx.sessions.status(fork)).executions, 1, 'the fork runs turns of its own');
      const inside = await rejected(fx.sessions.fork(source, uniqueId('ses_mid'), { at: 2 }));
      assert.ok(isSessiondError(inside));
      assert.is(inside.code, ErrorCode.NotSettled);
      assert.match(inside.message, 'is inside a turn');
      const taken = await rejected(fx.sessions.fork(source, fork, { at: 1 }));
      assert.ok(isSessiondError(taken));
      assert.is(taken.code, ErrorCode.SessionExists);
      const unknown = await rejected(fx.sessions.fork(uniqueId('ses_none'), uniqueId('ses_x')));
      assert.ok(isSessiondError(unknown));
      assert.is(unknown.kind, ErrorKind.NotFound);
    },
  );

  s('without wake, inputs wait; status pages them; dropPending drops them unrun', async ({ fx }) => {
    const id = uniqueId('ses_wait');
    const ids = [uniqueId('inp'), uniqueId('inp'), uniqueId('inp')];
    for (const inputId of ids) {
      const receipt = await fx.sessions.admit(id, { prompt: `p ${inputId}`, id: inputId, wake: false });
      assert.is(receipt.wake, false);
    }
    const status = await fx.sessions.status(id);
    assert.is(status.pendingCount, 3);
    assert.equal(
      status.pending.map((p) => p.inputId),
      ids,
    );
    assert.not.ok('prompt' in status.pending[0]!, 'prompts stay out of a status');
    const page = await fx.sessions.status(id, { pendingFrom: 1 });
    assert.is(page.pendingFrom, 1);
    assert.equal(
      page.pending.map((p) => p.inputId),
      ids.slice(1),
    );
    const bad = await rejected(fx.sessions.status(id, { pendingFrom: -1 }));
    assert.ok(isSessiondError(bad));
    assert.is(bad.kind, ErrorKind.InvalidInput);
    const dropped = await fx.sessions.dropPending(id, { inputIds: [ids[1]!], reason: 'contract' });
    assert.equal(dropped.dropped, [ids[1]]);
    assert.is(dropped.sessionId, id);
    const rest = await fx.sessions.dropPending(id);
    assert.equal(rest.dropped, [ids[0], ids[2]]);
    assert.is((await fx.sessions.status(id)).pendingCount, 0);
    assert.equal((await fx.sessions.dropPending(id)).dropped, [], 'nothing left to drop');
  });

  s('who did it: a drop records its actor in the event; an actor that is not 1-200 printable characters is refused', async ({ fx }) => {
    const id = uniqueId('ses_actor');
    await fx.sessions.admit(id, { prompt: 'later', wake: false });
    const bad = await rejected(fx.sessions.dropPending(id, { actor: '' }));
    assert.ok(isSessiondError(bad), String(bad));
    assert.is(bad.kind, ErrorKind.InvalidInput);
    const dropped = await fx.sessions.dropPending(id, { reason: 'stale', actor: 'ops@example.com' });
    assert.is(dropped.dropped.length, 1);
    const seen: SessionEvent[] = [];
    const sub = await fx.sessions.follow(id, (e) => {
      seen.push(e);
    });
    try {
      await waitFor(() => seen.some((e) => e.type === 'input.dropped'), { timeoutMs: 10_000, what: 'the input.dropped event' });
    } finally {
      await sub.close();
    }
    const drop = seen.find((e) => e.type === 'input.dropped')!;
    assert.is((drop.payload as { actor?: string }).actor, 'ops@example.com');
  });

  s('wake runs what waits; cancel with nothing running says so', async ({ fx }) => {
    const id = uniqueId('ses_wake');
    await fx.sessions.admit(id, { prompt: 'later', wake: false });
    const woken = await fx.sessions.wake(id);
    if (fx.wakeRuns === false) {
      assert.is(woken.status, 'refused');
      if (woken.status === 'refused') assert.match(woken.message, 'admitted without a wake');
      await fx.sessions.admit(id, { prompt: 'now' }); // a wake a worker acts on
      assert.is((await fx.sessions.wake(id)).status, 'requested', 'pending inputs that asked for a wake: requested');
    } else {
      assert.ok(['started', 'running_here'].includes(woken.status), `wake said ${woken.status}`);
    }
    await fx.settle(id);
    assert.is((await fx.sessions.wake(id)).status, 'nothing_pending');
    assert.is((await fx.sessions.status(id)).outcome, 'succeeded');
    const nothing = await fx.sessions.cancel(id, 'too late');
    assert.is(nothing.cancelled, false);
    if (!nothing.cancelled) assert.is(nothing.reason, 'nothing_to_cancel');
  });

  s('follow delivers every committed event in order, each once, then new ones as they commit', async ({ fx }) => {
    const id = uniqueId('ses_follow');
    await fx.sessions.admit(id, { prompt: 'one' });
    await fx.settle(id);
    const seen: SessionEvent[] = [];
    const sub = await fx.sessions.follow(id, (e) => {
      seen.push(e);
    });
    const settledSeq = (await fx.sessions.status(id)).seq;
    await waitFor(() => seen.length >= settledSeq, { timeoutMs: 10_000, what: `the ${settledSeq} events logged before following` });
    await fx.sessions.admit(id, { prompt: 'two' });
    await fx.settle(id);
    const last = (await fx.sessions.status(id)).seq;
    await waitFor(() => seen.length >= last, { timeoutMs: 10_000, what: `events up to seq ${last}` });
    await sub.close();
    assert.equal(
      seen.map((e) => e.seq),
      Array.from({ length: last }, (_, i) => i + 1),
      'seqs 1..last, in order, none twice',
    );
    assert.ok(seen.every((e) => e.sessionId === id));
    assert.is(seen[0]!.type, 'input.admitted');
    assert.is(seen.at(-1)!.type, 'execution.settled');
    assert.is(sub.lastSeq, last);
    const from = await fx.sessions.follow(id, () => undefined, { afterSeq: last });
    assert.is(from.lastSeq, last, 'afterSeq counts as seen');
    await from.close();
  });

  s('events: the history after a seq, in order, at most limit; not_found for a session with no events', async ({ fx }) => {
    const id = uniqueId('ses_events');
    await fx.sessions.admit(id, { prompt: 'one' });
    await fx.settle(id);
    const last = (await fx.sessions.status(id)).seq;
    const all = await fx.sessions.events(id);
    assert.equal(
      all.map((e) => e.seq),
      Array.from({ length: last }, (_, i) => i + 1),
    );
    assert.ok(all.every((e) => e.sessionId === id));
    assert.is(all[0]!.type, 'input.admitted');
    assert.equal(
      (await fx.sessions.events(id, { afterSeq: 1, limit: 2 })).map((e) => e.seq),
      [2, 3],
    );
    assert.equal(await fx.sessions.events(id, { afterSeq: last }), [], 'nothing after the last: an empty page, not an error');
    const none = await rejected(fx.sessions.events(uniqueId('ses_none')));
    assert.ok(isSessiondError(none) && none.code === ErrorCode.NotFound, String(none));
    const bad = await rejected(fx.sessions.events(id, { afterSeq: -1 }));
    assert.ok(isSessiondError(bad) && bad.kind === ErrorKind.InvalidInput, String(bad));
  });

  s('follow from afterSeq starts at the next event; a handler that throws does not stop delivery', async ({ fx }) => {
    const id = uniqueId('ses_after');
    await fx.sessions.admit(id, { prompt: 'one' });
    await fx.settle(id);
    const last = (await fx.sessions.status(id)).seq;
    const seen: number[] = [];
    const errors: unknown[] = [];
    const sub = await fx.sessions.follow(
      id,
      (e) => {
        seen.push(e.seq);
        if (e.seq === 3) throw new Error('handler failed');
      },
      { afterSeq: 2, onError: (err) => errors.push(err) },
    );
    await waitFor(() => seen.length >= last - 2, { timeoutMs: 10_000, what: 'the events after seq 2' });
    await sub.close();
    assert.equal(
      seen,
      Array.from({ length: last - 2 }, (_, i) => i + 3),
    );
    assert.is(errors.length, 1, "the handler's failure reported once");
  });

  s("tags: an admission's tags are the session's; tag sets and removes them, idempotently; limits and unknown sessions are refused", async ({ fx }) => {
    const id = uniqueId('ses_tags');
    await fx.sessions.admit(id, { prompt: 'hi', wake: false, tags: { customer: 'acme', env: 'test' } });
    assert.equal((await fx.sessions.status(id)).tags, { customer: 'acme', env: 'test' });
    const changed = await fx.sessions.tag(id, { tier: 'gold', env: null });
    assert.equal({ ...changed, seq: 0 }, { sessionId: id, tags: { customer: 'acme', tier: 'gold' }, changed: true, seq: 0 });
    const again = await fx.sessions.tag(id, { tier: 'gold', env: null });
    assert.equal(again, { sessionId: id, tags: { customer: 'acme', tier: 'gold' }, changed: false }, 'the same change again writes nothing');
    assert.equal((await fx.sessions.status(id)).tags, { customer: 'acme', tier: 'gold' });
    const many = Object.fromEntries(Array.from({ length: 31 }, (_, i) => [`k${i}`, 'v']));
    const over = await rejected(fx.sessions.tag(id, many));
    assert.ok(isSessiondError(over));
    assert.is(over.code, ErrorCode.LimitExceeded, 'a session carries at most 32 tags');
    const bad = await rejected(fx.sessions.tag(id, { 'bad key': 'v' }));
    assert.ok(isSessiondError(bad));
    assert.is(bad.kind, ErrorKind.InvalidInput);
    assert.match(bad.message, 'bad key');
    const none = await rejected(fx.sessions.tag(uniqueId('ses_none'), { a: 'b' }));
    assert.ok(isSessiondError(none));
    assert.is(none.code, ErrorCode.NotFound, 'tag never creates a session');
  });

  s('owner: the first admission fixes it; another owner answers not_found; a fork copies it; a list shows what an owner reaches', async ({ fx }) => {
    const run = uniqueId('own');
    const [id, free, fork] = [`${run}_a`, `${run}_free`, `${run}_fork`];
    await fx.sessions.admit(id, { prompt: 'acme’s secret', wake: false, owner: 'acme' });
    const other = await rejected(fx.sessions.admit(id, { prompt: 'let me in', wake: false, owner: 'globex' }));
    assert.ok(isSessiondError(other));
    assert.is(other.code, ErrorCode.NotFound, 'the answer of a session with no events');
    assert.not.match(other.message, 'acme', 'nothing of the owner');
    await fx.sessions.admit(id, { prompt: 'a trusted process', wake: false }); // no owner: anyone trusted
    assert.is((await fx.sessions.status(id)).ownedBy, 'acme');
    await fx.sessions.admit(free, { prompt: 'made by the CLI', wake: false });
    await fx.sessions.admit(free, { prompt: 'acme here', wake: false, owner: 'acme' });
    assert.is((await fx.sessions.status(free)).ownedBy, null, 'an ownerless session is never claimed');
    const notYours = await rejected(fx.sessions.fork(id, `${run}_theirs`, { owner: 'globex' }));
    assert.is(isSessiondError(notYours) && notYours.code, ErrorCode.NotFound);
    await fx.sessions.fork(id, fork);
    assert.is((await fx.sessions.status(fork)).ownedBy, 'acme', 'a fork keeps the source’s owner');
    const reach = async (owner: string) => (await fx.sessions.list({ idPrefix: run, reachableBy: owner })).sessions.map((x) => x.sessionId).sort();
    await waitFor(async () => (await reach('acme')).length === 3, { timeoutMs: 10_000, what: 'the three sessions listed' });
    assert.equal(await reach('acme'), [id, fork, free].sort());
    assert.equal(await reach('globex'), [free]);
  });

  s('list: newest first, by tag and state, paged by a cursor that misses nothing and repeats nothing', async ({ fx }) => {
    const run = uniqueId('run');
    const ids = Array.from({ length: 7 }, (_, i) => `${run}_s${i}`);
    for (const [i, id] of ids.entries()) await fx.sessions.admit(id, { prompt: `p${i}`, wake: false, tags: { run, half: i % 2 === 0 ? 'even' : 'odd' } });
    const all = async () => {
      const seen: string[] = [];
      let after: string | undefined;
      for (let pages = 0; pages < 10; pages++) {
        const page = await fx.sessions.list({ tags: { run }, limit: 3, ...(after ? { after } : {}) });
        assert.ok(page.sessions.length <= 3);
        seen.push(...page.sessions.map((x) => x.sessionId));
        if (page.next === null) break;
        after = page.next;
      }
      return seen;
    };
    // on NATS a worker's projection follows the stream: wait until it has the seven
    await waitFor(async () => (await all()).length === ids.length, { timeoutMs: 10_000, what: 'the seven sessions listed' });
    assert.equal(await all(), [...ids].reverse(), 'newest first, each once, over three pages');
    const first = (await fx.sessions.list({ tags: { run }, limit: 1 })).sessions[0]!;
    assert.equal(
      { ...first, createdAt: 0, updatedAt: 0 },
      {
        sessionId: ids[6],
        state: 'idle',
        waiting: false,
        pendingInputs: 1,
        seq: 1,
        createdAt: 0,
        updatedAt: 0,
        tags: { half: 'even', run },
        forkedFrom: null,
        ownedBy: null,
        calledBy: null,
        childCount: 0,
      },
    );
    const odd = await fx.sessions.list({ tags: { run, half: 'odd' } });
    assert.equal(
      odd.sessions.map((x) => x.sessionId),
      [ids[5], ids[3], ids[1]],
      'every tag must match',
    );
    assert.is(odd.next, null);
    assert.equal((await fx.sessions.list({ tags: { run }, state: 'settled' })).sessions, [], 'none of them ran');
    assert.equal(
      (await fx.sessions.list({ idPrefix: `${run}_s`, limit: 7 })).sessions.map((x) => x.sessionId),
      [...ids].reverse(),
      'by id prefix',
    );
    assert.equal(
      (await fx.sessions.list({ idPrefix: ids[3]! })).sessions.map((x) => x.sessionId),
      [ids[3]],
    );
    const badPrefix = await rejected(fx.sessions.list({ idPrefix: `${run} s` }));
    assert.ok(isSessiondError(badPrefix));
    assert.is(badPrefix.kind, ErrorKind.InvalidInput);
    assert.match(badPrefix.message, 'idPrefix');
    const bad = await rejected(fx.sessions.list({ after: 'not a cursor' }));
    assert.ok(isSessiondError(bad));
    assert.is(bad.kind, ErrorKind.InvalidInput);
    assert.match(bad.message, 'cursor');
  });

  return s;
}
