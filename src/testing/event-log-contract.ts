/**
 * The EventLog contract, run against every implementation. `another()` opens a second, independent
 * handle on the same log (as another process would), to test fencing and subscription across handles.
 *
 *   eventLogContract('sqlite', async () => ({ log, another, cleanup })).run();
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { EventLog } from '../events/event-log.ts';
import type { DraftEvent, SessionEvent } from '../events/envelope.ts';
import { ErrorCode, isSessiondError, SequenceConflictError } from '../errors.ts';
import { DEFAULT_MAX_PAYLOAD_BYTES } from '../events/codec.ts';
import { waitFor } from './wait.ts';
import { draft, ev, expectCode, uniqueId as uid } from './fixtures.ts';

export interface LogFixture {
  log: EventLog;
  another: () => Promise<EventLog>;
  cleanup: () => Promise<void>;
  /** Server-side resources reads hold open (JetStream: consumers on the stream); logs that hold none leave it out. */
  openReads?: () => Promise<number>;
}

/** A step.started to append, with ids unique across processes (the log may be a shared server). */
export function started(executionId = 'exe_1', step = 0, messageId = uid('msg')): DraftEvent {
  return draft(ev('step.started', { executionId, messageId, step }));
}
/** An input.admitted to append, with ids unique across processes. */
export function admitted(prompt = 'hello'): DraftEvent {
  return draft(ev('input.admitted', { inputId: uid('in'), prompt, delivery: 'queue', wake: true }));
}

export function eventLogContract(name: string, open: () => Promise<LogFixture>) {
  const s = suite<{ fx: LogFixture }>(`EventLog contract (${name})`, {} as { fx: LogFixture });
  s.before.each(async (ctx) => {
    ctx.fx = await open();
  });
  s.after.each(async (ctx) => {
    await ctx.fx.cleanup();
  });

  s('appends a batch to a new session and reads it back in order', async ({ fx }) => {
    const ses = uid('ses');
    const drafts = [admitted('a'), started(), admitted('b')];
    const committed = await fx.log.append(ses, 0, drafts);
    assert.equal(
      committed.map((e) => e.seq),
      [1, 2, 3],
    );
    assert.equal(
      committed.map((e) => e.id),
      drafts.map((d) => d.id),
    );
    assert.is((committed[0] as SessionEvent<'input.admitted'>).payload.source, 'user', 'schema defaults applied');
    const read = await fx.log.readSession(ses);
    assert.equal(read.map(strip), committed.map(strip));
    assert.is(await fx.log.lastSeq(ses), 3);
    assert.is(await fx.log.lastSeq(uid('nobody')), 0);
  });

  s('records when each append was committed, on append results and on every read', async ({ fx }) => {
    const ses = uid('ses');
    const drafts = [admitted('a'), started(), admitted('b')];
    const committed = [...(await fx.log.append(ses, 0, drafts.slice(0, 2))), ...(await fx.log.append(ses, 2, drafts.slice(2)))];
    const check = (events: SessionEvent[], how: string) => {
      assert.equal(
        events.map((e) => e.time),
        drafts.map((d) => d.time),
        `${how}: time stays the decision time`,
      );
      const times = events.map((e) => e.committedAt);
      assert.ok(
        times.every((t) => Number.isInteger(t) && Math.abs(t! - Date.now()) < 60_000),
        `${how}: committedAt is a recent time in ms (${times.join(', ')})`,
      );
      assert.is(times[0], times[1], `${how}: one append, one commit time`);
    };
    check(committed, 'append results');
    const read = await fx.log.readSession(ses);
    check(read, 'readSession');
    assert.equal(
      (await fx.log.readSession(ses, { afterSeq: 2 })).map((e) => e.committedAt),
      [read[2]!.committedAt],
      'readSession after a seq',
    );
    check(
      (await fx.log.readAll()).filter((e) => e.sessionId === ses),
      'readAll',
    );
    check(
      (await collect(fx.log.readPages({ pageSize: 1 }))).flat().filter((e) => e.sessionId === ses),
      'readPages',
    );
    const seen: SessionEvent[] = [];
    const sub = fx.log.subscribe({
      onBatch: (batch) => {
        seen.push(...batch.filter((e) => e.sessionId === ses));
      },
    });
    try {
      await waitFor(() => seen.length === 3, { what: 'the subscription to deliver the session' });
    } finally {
      await sub.close();
    }
    check(seen, 'subscribe');
  });

  s('refuses a stale expected sequence with the actual one, writing nothing', async ({ fx }) => {
    const ses = uid('ses');
    await fx.log.append(ses, 0, [admitted(), admitted()]);
    const err = await expectCode<SequenceConflictError>(fx.log.append(ses, 1, [admitted()]), ErrorCode.SequenceConflict);
    assert.instance(err, SequenceConflictError);
    assert.is(err.actualSeq, 2);
    assert.is(err.expectedSeq, 1);
    await expectCode(fx.log.append(ses, 5, [admitted()]), ErrorCode.SequenceConflict);
    await expectCode(fx.log.append(ses, 0, [admitted()]), ErrorCode.SequenceConflict);
    assert.is(await fx.log.lastSeq(ses), 2);
  });

  s('concurrent appends at one expected sequence: exactly one wins, across handles', async ({ fx }) => {
    const other = await fx.another();
    try {
      const ses = uid('ses');
      await fx.log.append(ses, 0, [admitted()]);
      const attempts = await Promise.allSettled([
        fx.log.append(ses, 1, [started('exe_a'), admitted()]),
        other.append(ses, 1, [started('exe_b'), admitted()]),
        fx.log.append(ses, 1, [started('exe_c')]),
        other.append(ses, 1, [started('exe_d')]),
      ]);
      const won = attempts.filter((a) => a.status === 'fulfilled');
      assert.is(won.length, 1, 'one append wins');
      for (const a of attempts) if (a.status === 'rejected') assert.instance(a.reason, SequenceConflictError);
      const events = await other.readSession(ses);
      const winner = (won[0] as PromiseFulfilledResult<SessionEvent[]>).value;
      assert.equal(
        events.slice(1).map((e) => e.id),
        winner.map((e) => e.id),
      );
    } finally {
      await other.close();
    }
  });

  s('a retried append with the same event ids is not written twice', async ({ fx }) => {
    const ses = uid('ses');
    const batch = [admitted(), started()];
    const first = await fx.log.append(ses, 0, batch);
    const retry = await fx.log.append(ses, 0, batch);
    assert.equal(
      retry.map((e) => [e.id, e.seq]),
      first.map((e) => [e.id, e.seq]),
    );
    assert.is(await fx.log.lastSeq(ses), 2);
    assert.is((await fx.log.readSession(ses)).length, 2);
    // old ids mixed with new ones: refused, nothing written
    await fx.log.append(ses, 2, [admitted()]);
    const mixed = await fx.log.append(ses, 3, [batch[0]!, admitted()]).then(
      () => 'ok',
      (e) => e,
    );
    assert.ok(isSessiondError(mixed), 'mixed old/new ids refused');
    assert.is(await fx.log.lastSeq(ses), 3);
  });

  s('another handle appending at 0 to a session it never saw: refused with the real sequence, or recognised as a retry', async ({ fx }) => {
    const other = await fx.another();
    try {
      const ses = uid('ses');
      const batch = [admitted(), started()];
      const first = await fx.log.append(ses, 0, batch);
      const err = await expectCode<SequenceConflictError>(other.append(ses, 0, [admitted()]), ErrorCode.SequenceConflict);
      assert.is(err.actualSeq, 2);
      const fresh = await fx.another();
      const retried = await fresh.append(ses, 0, batch);
      assert.equal(
        retried.map((e) => [e.id, e.seq]),
        first.map((e) => [e.id, e.seq]),
      );
      assert.is((await fx.log.readSession(ses)).length, 2, 'nothing written twice');
    } finally {
      await other.close();
    }
  });

  s('a batch is atomic: one invalid event writes nothing; live-only and empty batches are refused', async ({ fx }) => {
    const ses = uid('ses');
    const bad = draft(ev('step.started', { executionId: 'exe_1', messageId: 'm', step: -4 }), { time: 1 });
    await expectCode(fx.log.append(ses, 0, [admitted(), bad]), ErrorCode.InvalidPayload);
    assert.is(await fx.log.lastSeq(ses), 0);
    const delta = draft(ev('text.delta', { executionId: 'e', messageId: 'm', partId: 'p', delta: 'x' }), { time: 1 });
    await expectCode(fx.log.append(ses, 0, [delta]), ErrorCode.InvalidPayload);
    await expectCode(fx.log.append(ses, 0, []), ErrorCode.InvalidOption);
    await expectCode(fx.log.append('bad.session', 0, [admitted()]), ErrorCode.InvalidId);
    assert.is(await fx.log.lastSeq(ses), 0);
  });

  s('a payload over the size limit is refused, writing nothing; payloads under it are taken even when together they are over it', async ({ fx }) => {
    const ses = uid('ses');
    const big = 'x'.repeat(DEFAULT_MAX_PAYLOAD_BYTES);
    const err = await expectCode(fx.log.append(ses, 0, [admitted('small'), admitted(big)]), ErrorCode.PayloadTooLarge);
    assert.match(err.message, `over the limit of ${DEFAULT_MAX_PAYLOAD_BYTES} bytes`);
    assert.is(await fx.log.lastSeq(ses), 0);
    const half = 'y'.repeat(DEFAULT_MAX_PAYLOAD_BYTES / 2);
    const committed = await fx.log.append(ses, 0, [admitted(half), admitted(half)]);
    assert.equal(
      (await fx.log.readSession(ses)).map((e) => e.id),
      committed.map((e) => e.id),
    );
  });

  s('reads a session from a sequence, with a limit', async ({ fx }) => {
    const ses = uid('ses');
    await fx.log.append(ses, 0, [admitted('1'), admitted('2'), admitted('3'), admitted('4')]);
    assert.equal(
      (await fx.log.readSession(ses, { afterSeq: 2 })).map((e) => e.seq),
      [3, 4],
    );
    assert.equal(
      (await fx.log.readSession(ses, { afterSeq: 1, limit: 2 })).map((e) => e.seq),
      [2, 3],
    );
    assert.equal(await fx.log.readSession(ses, { afterSeq: 4 }), []);
  });

  s('reads everything in commit order from a global position', async ({ fx }) => {
    const start = await fx.log.head();
    const a = uid('ses');
    const b = uid('ses');
    const c1 = await fx.log.append(a, 0, [admitted('a1')]);
    const c2 = await fx.log.append(b, 0, [admitted('b1'), admitted('b2')]);
    const c3 = await fx.log.append(a, 1, [admitted('a2')]);
    const all = await fx.log.readAll({ after: start });
    assert.equal(
      all.map((e) => e.id),
      [...c1, ...c2, ...c3].map((e) => e.id),
    );
    const positions = all.map((e) => e.position!);
    assert.ok(
      positions.every((p, i) => i === 0 || p >= positions[i - 1]!),
      'positions never decrease',
    );
    assert.is(await fx.log.head(), positions[positions.length - 1]);
    const afterFirst = await fx.log.readAll({ after: c1[0]!.position! });
    assert.equal(
      afterFirst.map((e) => e.id),
      [...c2, ...c3].map((e) => e.id),
    );
  });

  s("subscribers see past and new commits in order, including another handle's", async ({ fx }) => {
    const other = await fx.another();
    const start = await fx.log.head();
    const ses = uid('ses');
    const seen: string[] = [];
    const sub = fx.log.subscribe({
      after: start,
      onBatch: (events) => {
        for (const e of events) seen.push(e.id);
      },
    });
    try {
      const mine = await fx.log.append(ses, 0, [admitted('x')]);
      const theirs = await other.append(ses, 1, [admitted('y'), admitted('z')]);
      const expected = [...mine, ...theirs].map((e) => e.id);
      await waitFor(() => seen.length >= 3, { timeoutMs: 5000, what: 'subscriber to see 3 events' });
      assert.equal(seen, expected);
      await waitFor(() => sub.position >= theirs[1]!.position!, { timeoutMs: 2000, what: 'subscription position to advance' });
      // resuming from the position of the first commit delivers only what came after it
      const resumed: string[] = [];
      const sub2 = other.subscribe({
        after: mine[0]!.position!,
        onBatch: (events) => {
          for (const e of events) resumed.push(e.id);
        },
      });
      await waitFor(() => resumed.length >= 2, { timeoutMs: 5000, what: 'resumed subscriber' });
      assert.equal(
        resumed.filter((id) => expected.includes(id)),
        expected.slice(1),
      );
      await sub2.close();
    } finally {
      await sub.close();
      await other.close();
    }
  });

  s('a subscriber whose handler throws stops and reports the error', async ({ fx }) => {
    const errors: unknown[] = [];
    const sub = fx.log.subscribe({
      after: await fx.log.head(),
      onBatch: () => {
        throw new Error('handler broke');
      },
      onError: (err) => errors.push(err),
    });
    await fx.log.append(uid('ses'), 0, [admitted()]);
    await waitFor(() => errors.length > 0, { timeoutMs: 5000, what: 'onError' });
    assert.match(String(errors[0]), 'handler broke');
    await sub.close();
  });

  s('readPages: the whole log in commit order, in pages of at most pageSize events that never split a position', async ({ fx }) => {
    const a = uid('ses');
    const b = uid('ses');
    const committed: SessionEvent[] = [];
    for (let i = 0; i < 4; i++) {
      committed.push(...(await fx.log.append(a, 3 * i, [admitted(), started(), admitted()])));
      committed.push(...(await fx.log.append(b, i, [admitted()])));
    }
    const pages = await collect(fx.log.readPages({ pageSize: 4 }));
    assert.equal(
      pages.flat().map((e) => e.id),
      committed.map((e) => e.id),
    );
    assert.equal(
      pages.flat().map((e) => e.position),
      committed.map((e) => e.position),
    );
    assertWholePages(pages, 4);
    assert.ok(pages.length >= 4, `${pages.length} pages of at most 4 of 16 events`);
    // pages as large as the whole log: one page
    assert.equal(
      (await collect(fx.log.readPages({ pageSize: 1000 }))).map((p) => p.length),
      [committed.length],
    );
    // a page smaller than a batch: the batch alone
    assertWholePages(await collect(fx.log.readPages({ pageSize: 1 })), 1);
  });

  s('readPages: from a position, and nothing from the head or on an empty log; a bad pageSize is refused', async ({ fx }) => {
    assert.equal(await collect(fx.log.readPages()), [], 'an empty log has no pages');
    const ses = uid('ses');
    const first = await fx.log.append(ses, 0, [admitted()]);
    const rest = [...(await fx.log.append(ses, 1, [admitted(), started()])), ...(await fx.log.append(ses, 3, [admitted()]))];
    assert.equal(
      (await collect(fx.log.readPages({ after: first[0]!.position! }))).flat().map((e) => e.id),
      rest.map((e) => e.id),
    );
    assert.equal(await collect(fx.log.readPages({ after: await fx.log.head() })), []);
    for (const pageSize of [0, 1.5, -1]) expectCode(() => fx.log.readPages({ pageSize }), ErrorCode.InvalidOption);
  });

  s('readPages: commits made while reading are read up to some point, in order, never with a gap', async ({ fx }) => {
    const ses = uid('ses');
    let seq = 0;
    const before: string[] = [];
    for (let i = 0; i < 5; i++) {
      const c = await fx.log.append(ses, seq, [admitted()]);
      seq = c.at(-1)!.seq;
      before.push(c[0]!.id);
    }
    const read: string[] = [];
    for await (const page of fx.log.readPages({ pageSize: 1 })) {
      read.push(...page.map((e) => e.id));
      if (seq < 10) seq = (await fx.log.append(ses, seq, [admitted()])).at(-1)!.seq; // the log grows under the reader
    }
    const all = (await fx.log.readAll()).map((e) => e.id);
    assert.equal(read, all.slice(0, read.length), 'a prefix of the log');
    assert.ok(read.length >= before.length, 'everything committed before the read');
  });

  s('readPages: leaving the loop early ends the read and frees what it held', async ({ fx }) => {
    const ses = uid('ses');
    for (let i = 0; i < 6; i++) await fx.log.append(ses, i, [admitted()]);
    let pages = 0;
    for await (const page of fx.log.readPages({ pageSize: 2 })) {
      assert.is(page.length, 2);
      if (++pages === 1) break;
    }
    assert.is(pages, 1);
    if (fx.openReads) await waitFor(async () => (await fx.openReads!()) === 0, { timeoutMs: 5000, what: "the read's consumer to be gone" });
    // the log is still fine for other reads
    assert.is((await collect(fx.log.readPages({ pageSize: 2 }))).flat().length, 6);
    if (fx.openReads) await waitFor(async () => (await fx.openReads!()) === 0, { timeoutMs: 5000, what: 'no consumer left after a full read' });
  });

  s('a subscriber that catches up gets several commits per call, whole and in order', async ({ fx }) => {
    const start = await fx.log.head();
    const committed: SessionEvent[] = [];
    for (let i = 0; i < 30; i++) committed.push(...(await fx.log.append(uid('ses'), 0, [admitted(), started()])));
    const calls: SessionEvent[][] = [];
    const sub = fx.log.subscribe({
      after: start,
      onBatch: (events) => {
        calls.push(events);
      },
    });
    try {
      await waitFor(() => calls.flat().length >= committed.length, { timeoutMs: 5000, what: 'the subscriber to catch up' });
      assert.equal(
        calls.flat().map((e) => e.id),
        committed.map((e) => e.id),
      );
      assertWholePages(calls, Infinity);
      assert.ok(calls.length < 30, `30 commits in ${calls.length} calls`);
    } finally {
      await sub.close();
    }
  });

  return s;
}

async function collect(pages: AsyncIterable<SessionEvent[]>): Promise<SessionEvent[][]> {
  const out: SessionEvent[][] = [];
  for await (const page of pages) out.push(page);
  return out;
}

/** No position in two pages; no page over `max` events unless it is one position alone. */
function assertWholePages(pages: SessionEvent[][], max: number): void {
  const pageOf = new Map<number, number>();
  pages.forEach((page, i) => {
    assert.ok(page.length > 0, 'no empty page');
    const positions = new Set(page.map((e) => e.position!));
    assert.ok(page.length <= max || positions.size === 1, `page ${i} has ${page.length} events over ${positions.size} positions (max ${max})`);
    for (const p of positions) {
      assert.ok(!pageOf.has(p) || pageOf.get(p) === i, `position ${p} split over pages ${pageOf.get(p)} and ${i}`);
      pageOf.set(p, i);
    }
  });
}

/** An event without what the log adds (JetStream's append result has the writer's commit time, its reads the server's). */
function strip(e: SessionEvent) {
  const { position: _p, committedAt: _c, ...rest } = e;
  return rest;
}
