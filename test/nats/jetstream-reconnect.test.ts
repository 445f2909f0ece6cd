// JetStream-specific behaviour of the NATS event log against a real nats-server: surviving server
// restarts and crashes, retried appends (lost acks), the wrong-last-sequence mapping, reads that
// never split a message. Waits are on events or polls with deadlines, never bare sleeps.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { jetstream, JetStreamApiError } from '@nats-io/jetstream';
import { ErrorCode, isSessiondError } from '../../src/errors.ts';
import { catalog } from '../../src/events/catalog.ts';
import { parseDraft } from '../../src/events/codec.ts';
import type { DraftEvent, SessionEvent } from '../../src/events/envelope.ts';
import { SequenceConflictError } from '../../src/events/event-log.ts';
import { JetStreamEventLog, encodeBatch, type JetStreamEventLogOptions } from '../../src/nats/jetstream-event-log.ts';
import { isWrongLastSequence, jsErrorCode, JsErrorCode } from '../../src/nats/stream.ts';
import { subjects } from '../../src/nats/subjects.ts';
import { admitted, started } from '../../src/testing/event-log-contract.ts';
import { startNatsServer, WORKER, type NatsServer } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';

const s = suite<{ server: NatsServer; logs: JetStreamEventLog[] }>('JetStream event log: reconnects, retries, conflicts');
let n = 0;
const ses = () => `ses_rc_${process.pid}_${++n}`;

async function open(ctx: { server: NatsServer; logs: JetStreamEventLog[] }, extra: Partial<JetStreamEventLogOptions> = {}) {
  const log = await JetStreamEventLog.open({ connection: { servers: ctx.server.url, ...WORKER, reconnectWaitMs: 50 }, ...extra });
  ctx.logs.push(log);
  return log;
}
const ids = (events: SessionEvent[]) => events.map((e) => e.id);

s.before(async (ctx) => { ctx.server = await startNatsServer(); ctx.logs = []; });
s.before.each(() => { (globalThis as any).__t = Date.now(); });
s.after.each(async (ctx) => { console.log('took', Date.now() - (globalThis as any).__t); for (const log of ctx.logs.splice(0)) await log.close(); });
s.after(async (ctx) => { await ctx.server.dispose(); });

s('the server restarts between appends: later appends succeed, the sequence is continuous, nothing doubled', async (ctx) => {
  const log = await open(ctx);
  const id = ses();
  const first = await log.append(id, 0, [admitted('1')]);
  await ctx.server.restart();
  const second = await log.append(id, 1, [admitted('2'), started()]);
  await ctx.server.restart();
  const third = await log.append(id, 3, [admitted('4')]);
  assert.equal([...first, ...second, ...third].map((e) => e.seq), [1, 2, 3, 4]);
  const read = await log.readSession(id);
  assert.equal(ids(read), ids([...first, ...second, ...third]));
  assert.is(await log.lastSeq(id), 4);
});

s('a subscriber sees every event exactly once across a crash and restart, including an append made during the outage', async (ctx) => {
  const reader = await open(ctx);
  const writer = await open(ctx, { publishTimeoutMs: 500 });
  const id = ses();
  const seen: SessionEvent[] = [];
  const sub = reader.subscribe({ after: await reader.head(), onBatch: (events) => { seen.push(...events); } });
  const before = [...await writer.append(id, 0, [admitted('a')]), ...await writer.append(id, 1, [admitted('b'), admitted('c')])];
  await waitFor(() => seen.length >= 3, { timeoutMs: 5000, what: 'events before the crash' });
  await ctx.server.kill();
  const retriesBefore = writer.stats.publishRetries;
  const during = writer.append(id, 3, [admitted('d')]);
  await waitFor(() => writer.stats.publishRetries > retriesBefore, { timeoutMs: 5000, what: 'the append to be retried while the server is down' });
  await ctx.server.restart();
  const landed = await during;
  const after = await writer.append(id, 4, [admitted('e'), admitted('f')]);
  const expected = [...before, ...landed, ...after];
  await waitFor(() => seen.length >= expected.length, { timeoutMs: 10_000, what: 'all events after the restart' });
  assert.equal(ids(seen), ids(expected), 'every event once, in order');
  assert.equal(seen.map((e) => e.seq), [1, 2, 3, 4, 5, 6]);
  await waitFor(() => sub.position === after[0]!.position, { timeoutMs: 2000, what: 'subscription position' });
  await sub.close();
  assert.equal(ids(await reader.readSession(id)), ids(expected));
});

s('a retried append (lost ack) returns the committed events and writes nothing twice', async (ctx) => {
  const log = await open(ctx);
  const other = await open(ctx);
  const id = ses();
  const batch = [admitted('x'), started('exe_r')];

  // retried by the same writer, later: the stale expectedSeq is recognised as this exact batch
  const first = await log.append(id, 0, batch);
  const retry = await log.append(id, 0, batch);
  assert.equal(retry.map((e) => [e.id, e.seq, e.position]), first.map((e) => [e.id, e.seq, e.position]));

  // two copies in flight at once: the server drops the second (same Nats-Msg-Id), both get the batch
  const id2 = ses();
  const batch2 = [admitted('y')];
  const [a, b] = await Promise.all([log.append(id2, 0, batch2), log.append(id2, 0, batch2)]);
  assert.equal(ids(a!), ids(b!));
  assert.is(a![0]!.position, b![0]!.position);
  assert.is(log.stats.duplicateAcks, 1, 'the duplicate ack path was taken');

  // the publish landed but its ack was lost: a writer that never saw the ack retries
  const id3 = ses();
  const batch3 = [admitted('z1'), admitted('z2')];
  await other.lastSeq(id3); // other caches "empty session"
  const stored = batch3.map((d, i) => ({ ...parseDraft(d), version: catalog[d.type].version, sessionId: id3, seq: i + 1 }) as SessionEvent);
  const ack = await jetstream(log.nc).publish(subjects.events(id3), encodeBatch(stored), { msgID: batch3[0]!.id, expect: { lastSubjectSequence: 0 } });
  const retried = await other.append(id3, 0, batch3);
  assert.equal(ids(retried), ids(batch3 as unknown as SessionEvent[]));
  assert.is(retried[0]!.position, ack.seq);

  // and again after a restart (the server rebuilt its dedupe state; the tail check also covers it)
  await ctx.server.restart();
  for (const [sid, b, expect] of [[id, batch, first], [id2, batch2, a!]] as [string, DraftEvent[], SessionEvent[]][]) {
    const again = await log.append(sid, 0, b);
    assert.equal(again.map((e) => [e.id, e.seq, e.position]), expect.map((e) => [e.id, e.seq, e.position]));
  }
  assert.is(await log.lastSeq(id), 2);
  assert.is((await log.readSession(id)).length, 2);
  assert.is((await log.readSession(id2)).length, 1);
  assert.is((await other.readSession(id3)).length, 2);

  // the last batch's ids reused in a new batch, in any position: refused, nothing written
  const reuse = await log.append(id, 2, [admitted('new'), batch[1]!]).then(() => 'ok', (e) => e);
  assert.ok(isSessiondError(reuse, ErrorCode.DuplicateEvent), `duplicate_event, got ${String(reuse)}`);
  assert.is(await log.lastSeq(id), 2);
});

s('wrong last sequence (10071) from the server maps to SequenceConflictError with the actual sequence', async (ctx) => {
  const a = await open(ctx);
  const b = await open(ctx);
  const id = ses();
  await a.append(id, 0, [admitted('1')]); // a caches seq 1
  await b.append(id, 1, [admitted('2'), admitted('3')]);
  const err = await a.append(id, 1, [admitted('late')]).then(() => undefined, (e) => e);
  assert.instance(err, SequenceConflictError);
  assert.is((err as SequenceConflictError).actualSeq, 3);
  assert.is((err as SequenceConflictError).expectedSeq, 1);
  assert.is(jsErrorCode((err as Error).cause), JsErrorCode.StreamWrongLastSequence, 'the server refused it, not the cache');
  assert.is(a.stats.wrongLastSequence, 1);
  assert.ok(isWrongLastSequence(new JetStreamApiError({ code: 400, err_code: 10071, description: 'wrong last sequence: 7' })));
  assert.not.ok(isWrongLastSequence(new Error('wrong last sequence: 7')), 'never matched by message text');

  // two writers creating one session: exactly one wins, the other learns the actual sequence
  const fresh = ses();
  const results = await Promise.allSettled([a.append(fresh, 0, [admitted('a')]), b.append(fresh, 0, [admitted('b'), admitted('c')])]);
  const won = results.filter((r) => r.status === 'fulfilled') as PromiseFulfilledResult<SessionEvent[]>[];
  assert.is(won.length, 1);
  const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
  assert.instance(lost.reason, SequenceConflictError);
  assert.is((lost.reason as SequenceConflictError).actualSeq, won[0]!.value.length);
});

s('an append while the server stays down fails clearly; retrying it later lands it once', async (ctx) => {
  const log = await open(ctx, { publishTimeoutMs: 300, publishRetryMs: 1200 });
  const id = ses();
  await log.append(id, 0, [admitted('1')]);
  await ctx.server.kill();
  const batch = [admitted('2')];
  const t0 = Date.now();
  const err = await log.append(id, 1, batch).then(() => undefined, (e) => e);
  assert.ok(isSessiondError(err), `a SessiondError, got ${String(err)}`);
  assert.match((err as Error).message, /unreachable.*retry the exact same append/);
  assert.ok(Date.now() - t0 < 5000, 'gave up within the retry budget');
  await ctx.server.restart();
  const landed = await log.append(id, 1, batch);
  assert.equal(landed.map((e) => e.seq), [2]);
  assert.equal(ids(await log.readSession(id)).slice(1), ids(landed));
});

s('readAll never splits a message and returns promptly on an empty range; close leaves a shared connection open', async (ctx) => {
  const log = await open(ctx);
  const start = await log.head();
  const id = ses();
  const c1 = await log.append(id, 0, [admitted('1'), admitted('2'), admitted('3')]);
  const c2 = await log.append(id, 3, [admitted('4')]);
  assert.equal(ids(await log.readAll({ after: start, limit: 2 })), ids(c1), 'a whole message even over the limit');
  assert.equal(ids(await log.readAll({ after: start, limit: 3 })), ids(c1));
  assert.equal(ids(await log.readAll({ after: start, limit: 4 })), ids([...c1, ...c2]));
  assert.equal(ids(await log.readSession(id, { afterSeq: 2, limit: 1 })), [c1[2]!.id]);
  const t0 = Date.now();
  assert.equal(await log.readAll({ after: await log.head() }), []);
  assert.equal(await log.readSession(ses()), []);
  assert.ok(Date.now() - t0 < 1000, `empty reads took ${Date.now() - t0} ms`);

  const shared = await open(ctx, { connection: log.nc });
  await shared.close();
  assert.not.ok(log.nc.isClosed(), 'a connection the log did not open stays open');
  const closed = await shared.append(id, 4, [admitted('x')]).then(() => undefined, (e) => e);
  assert.ok(isSessiondError(closed, ErrorCode.LogClosed));
});

s.run();
