// JetStream-specific behaviour of the NATS event log against a real nats-server: surviving server
// restarts and crashes, retried appends (lost acks), the wrong-last-sequence mapping, reads that
// never split a message. Waits are on events or polls with deadlines, never bare sleeps.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { jetstream, jetstreamManager, JetStreamApiError } from '@nats-io/jetstream';
import { readFileSync } from 'node:fs';
import { millis } from '@nats-io/transport-node';
import { ErrorCode, isSessiondError, SequenceConflictError } from '../../src/errors.ts';
import { parseDraft } from '../../src/events/codec.ts';
import type { DraftEvent, SessionEvent } from '../../src/events/envelope.ts';
import { JetStreamEventLog, type JetStreamEventLogOptions } from '../../src/nats/jetstream-event-log.ts';
import { connectNats, parseConnectionOptions } from '../../src/nats/connection.ts';
import { encodeBatch, ensureEventStream, isWrongLastSequence, jsErrorCode, JsErrorCode } from '../../src/nats/stream.ts';
import { STREAM_NAME, subjects } from '../../src/nats/subjects.ts';
import { admitted, started } from '../../src/testing/event-log-contract.ts';
import { freePort, startNatsServer, ADMIN, OBSERVER, WORKER, type NatsServer } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { committed } from '../../src/testing/fixtures.ts';

const s = suite<{ server: NatsServer; logs: JetStreamEventLog[] }>('JetStream event log: reconnects, retries, conflicts, permissions');
let n = 0;
const ses = () => `ses_rc_${process.pid}_${++n}`;

async function open(ctx: { server: NatsServer; logs: JetStreamEventLog[] }, extra: Partial<JetStreamEventLogOptions> = {}) {
  const log = await JetStreamEventLog.open({ connection: { servers: ctx.server.url, ...WORKER, reconnectWaitMs: 50 }, ...extra });
  ctx.logs.push(log);
  return log;
}
const ids = (events: SessionEvent[]) => events.map((e) => e.id);
async function nextStatus(log: JetStreamEventLog, type: string): Promise<void> {
  for await (const status of log.nc.status()) if (status.type === type) return;
}

s.before(async (ctx) => {
  ctx.server = await startNatsServer();
  ctx.logs = [];
});
s.after.each(async (ctx) => {
  for (const log of ctx.logs.splice(0)) await log.close();
});
s.after(async (ctx) => {
  await ctx.server.dispose();
});

s('the server restarts between appends: later appends succeed, the sequence is continuous, nothing doubled', async (ctx) => {
  const log = await open(ctx);
  const id = ses();
  const first = await log.append(id, 0, [admitted('1')]);
  await ctx.server.restart();
  const second = await log.append(id, 1, [admitted('2'), started()]);
  await ctx.server.restart();
  const third = await log.append(id, 3, [admitted('4')]);
  assert.equal(
    [...first, ...second, ...third].map((e) => e.seq),
    [1, 2, 3, 4],
  );
  const read = await log.readSession(id);
  assert.equal(ids(read), ids([...first, ...second, ...third]));
  assert.is(await log.lastSeq(id), 4);
});

s('a subscriber sees every event exactly once across a crash and restart, including an append made during the outage', async (ctx) => {
  const reader = await open(ctx);
  const writer = await open(ctx, { publishTimeoutMs: 500 });
  const id = ses();
  const seen: SessionEvent[] = [];
  const sub = reader.subscribe({
    after: await reader.head(),
    onBatch: (events) => {
      seen.push(...events);
    },
  });
  const before = [...(await writer.append(id, 0, [admitted('a')])), ...(await writer.append(id, 1, [admitted('b'), admitted('c')]))];
  await waitFor(() => seen.length >= 3, { timeoutMs: 5000, what: 'events before the crash' });
  const disconnected = nextStatus(writer, 'disconnect');
  await ctx.server.kill();
  const during = writer.append(id, 3, [admitted('d')]);
  during.catch(() => undefined); // awaited below; never an unhandled rejection if the test fails first
  await disconnected;
  await ctx.server.restart();
  const landed = await during;
  const after = await writer.append(id, 4, [admitted('e'), admitted('f')]);
  const expected = [...before, ...landed, ...after];
  await waitFor(() => seen.length >= expected.length, { timeoutMs: 10_000, what: 'all events after the restart' });
  assert.equal(ids(seen), ids(expected), 'every event once, in order');
  assert.equal(
    seen.map((e) => e.seq),
    [1, 2, 3, 4, 5, 6],
  );
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
  assert.equal(
    retry.map((e) => [e.id, e.seq, e.position]),
    first.map((e) => [e.id, e.seq, e.position]),
  );

  // two copies in flight at once: the server drops the second (same Nats-Msg-Id), both get the batch
  const id2 = ses();
  const batch2 = [admitted('y')];
  const [a, b] = await Promise.all([log.append(id2, 0, batch2), log.append(id2, 0, batch2)]);
  assert.equal(ids(a!), ids(b!));
  assert.is(a![0]!.position, b![0]!.position);
  // the server drops the second copy as a duplicate, or (nats-server 2.11+) answers 10158 while the
  // first is being stored, and the resend then finds it: either way the log recognises its batch
  assert.ok(log.stats.retriesRecognised >= 2, `the second copy was recognised as the stored batch (${JSON.stringify(log.stats)})`);

  // the publish landed but its ack was lost: a writer that never saw the ack retries
  const id3 = ses();
  const batch3 = [admitted('z1'), admitted('z2')];
  await other.lastSeq(id3); // other caches "empty session"
  const stored = batch3.map((d) => parseDraft(d)).map((d, i) => committed(d, { id: d.id, sessionId: id3, seq: i + 1, time: d.time }));
  const ack = await jetstream(log.nc).publish(subjects.events(id3), encodeBatch(stored), { msgID: batch3[0]!.id, expect: { lastSubjectSequence: 0 } });
  const retried = await other.append(id3, 0, batch3);
  assert.equal(ids(retried), ids(batch3 as unknown as SessionEvent[]));
  assert.is(retried[0]!.position, ack.seq);

  // and again after a restart (the server rebuilt its dedupe state; the tail check also covers it)
  await ctx.server.restart();
  for (const [sid, b, expect] of [
    [id, batch, first],
    [id2, batch2, a!],
  ] as [string, DraftEvent[], SessionEvent[]][]) {
    const again = await log.append(sid, 0, b);
    assert.equal(
      again.map((e) => [e.id, e.seq, e.position]),
      expect.map((e) => [e.id, e.seq, e.position]),
    );
  }
  assert.is(await log.lastSeq(id), 2);
  assert.is((await log.readSession(id)).length, 2);
  assert.is((await log.readSession(id2)).length, 1);
  assert.is((await other.readSession(id3)).length, 2);

  // the last batch's ids reused in a new batch, in any position: refused, nothing written
  const reuse = await log.append(id, 2, [admitted('new'), batch[1]!]).then(
    () => 'ok',
    (e) => e,
  );
  assert.ok(isSessiondError(reuse, ErrorCode.DuplicateEvent), `duplicate_event, got ${String(reuse)}`);
  assert.is(await log.lastSeq(id), 2);
});

s('wrong last sequence (10071) from the server maps to SequenceConflictError with the actual sequence', async (ctx) => {
  const a = await open(ctx);
  const b = await open(ctx);
  const id = ses();
  await a.append(id, 0, [admitted('1')]); // a caches seq 1
  await b.append(id, 1, [admitted('2'), admitted('3')]);
  const err = await a.append(id, 1, [admitted('late')]).then(
    () => undefined,
    (e) => e,
  );
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
  const err = await log.append(id, 1, batch).then(
    () => undefined,
    (e) => e,
  );
  assert.ok(isSessiondError(err), `a SessiondError, got ${String(err)}`);
  assert.match((err as Error).message, /unreachable.*retry the exact same append/);
  assert.ok(Date.now() - t0 < 5000, 'gave up within the retry budget');
  await ctx.server.restart();
  const landed = await log.append(id, 1, batch);
  assert.equal(
    landed.map((e) => e.seq),
    [2],
  );
  assert.equal(ids(await log.readSession(id)).slice(1), ids(landed));
});

/**
 * A read whose consumer stops delivering mid-read (here the server is frozen with SIGSTOP; in a
 * cluster, the server holding the consumer cut off from the client's) fails with `log_closed`
 * within the log's retry budget. nats.js's ordered consumer only pulls again, forever: a worker's
 * cold load of a session hung, and that session with it (test/cluster/failover-leader.test.ts d).
 */
s('a read whose server freezes mid-read fails with log_closed in bounded time instead of hanging; after SIGCONT it reads whole', async () => {
  const own = await startNatsServer();
  const log = await JetStreamEventLog.open({ connection: { servers: own.url, ...WORKER, reconnectWaitMs: 50 }, publishTimeoutMs: 300, publishRetryMs: 1200 });
  const pid = own.pid!;
  try {
    const id = ses();
    const messages = 700; // more than one pull of the read (DEFAULT_READ_BATCH)
    for (let i = 0; i < messages; i++) await log.append(id, i, [admitted(String(i))]);
    const pages = log.readPages({ pageSize: 10 })[Symbol.asyncIterator]();
    assert.is((await pages.next()).value?.length, 10, 'the read has started');
    process.kill(pid, 'SIGSTOP');
    let outcome: string;
    try {
      await waitFor(() => readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] === 'T', { what: 'nats-server to be stopped' });
      const drained = (async () => {
        for (let page = await pages.next(); !page.done; page = await pages.next());
        return 'read to the end while the server was frozen';
      })().catch((err: unknown) => (isSessiondError(err, ErrorCode.LogClosed) ? 'log_closed' : `another error: ${String(err)}`));
      outcome = await Promise.race([drained, new Promise<string>((r) => setTimeout(() => r('still waiting after 20 s'), 20_000).unref())]);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    assert.is(outcome, 'log_closed');
    const all = await log.readAll();
    assert.equal(
      all.map((e) => e.seq),
      Array.from({ length: messages }, (_, i) => i + 1),
      'after SIGCONT the same read gets every message, in order',
    );
  } finally {
    await log.close();
    await own.dispose();
  }
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
  const closed = await shared.append(id, 4, [admitted('x')]).then(
    () => undefined,
    (e) => e,
  );
  assert.ok(isSessiondError(closed, ErrorCode.LogClosed));
});

s('an observer (nats.conf) reads, subscribes and learns lastSeq through consumers, and may not append', async (ctx) => {
  const log = await open(ctx);
  const id = ses();
  const committed = await log.append(id, 0, [admitted('1'), admitted('2')]);
  const observer = await JetStreamEventLog.open({ connection: { servers: ctx.server.url, ...OBSERVER }, ensureStream: false });
  ctx.logs.push(observer);
  assert.equal(ids(await observer.readSession(id)), ids(committed));
  assert.is(await observer.lastSeq(id), 2);
  assert.is(await observer.lastSeq(ses()), 0);
  const seen: string[] = [];
  const sub = observer.subscribe({
    after: committed[0]!.position! - 1,
    onBatch: (events) => {
      seen.push(...ids(events));
    },
  });
  await waitFor(() => seen.length >= 2, { timeoutMs: 5000, what: 'the observer subscription' });
  await sub.close();
  const refused = await observer.append(id, 2, [admitted('3')]).then(
    () => undefined,
    (e) => e,
  );
  assert.ok(isSessiondError(refused, ErrorCode.PermissionDenied), `refused with a clear error, got ${String(refused)}`);
  assert.match((refused as Error).message, /worker user/);
  assert.is(await log.lastSeq(id), 2);
});

s('the stream is verified idempotently; only the admin user (setup, manage) may update it in place (a worker is told to run sessiond setup)', async (ctx) => {
  const log = await open(ctx);
  const workerJsm = await jetstreamManager(log.nc);
  const again = await ensureEventStream(workerJsm);
  assert.is(again.config.storage, 'file');
  assert.equal(again.config.subjects, [subjects.allEvents]);
  assert.is(millis(again.config.duplicate_window), 120_000);
  assert.ok(again.config.deny_delete && !again.config.deny_purge, 'the stream denies delete; purge is left to nats.conf (only the admin)');
  const byWorker = await ensureEventStream(workerJsm, { duplicateWindowMs: 90_000 }).then(
    () => undefined,
    (e) => e,
  );
  // a worker only verifies: it refuses a stream that differs, naming the setting (it never tries to change it)
  assert.ok(isSessiondError(byWorker, ErrorCode.InvalidOption), `a worker may not reconfigure the stream, got ${String(byWorker)}`);
  assert.match((byWorker as Error).message, 'duplicate_window 120000 ms (needs 90000 ms)');
  const tryManage = await ensureEventStream(workerJsm, { duplicateWindowMs: 90_000, manage: true }).then(
    () => undefined,
    (e) => e,
  );
  assert.ok(isSessiondError(tryManage, ErrorCode.PermissionDenied), `nor may it as setup, got ${String(tryManage)}`);
  assert.match((byWorker as Error).message, 'sessiond setup --nats <url> --nats-user admin');
  const admin = await connectNats({ servers: ctx.server.url, ...ADMIN });
  const jsm = await jetstreamManager(admin);
  const changed = await ensureEventStream(jsm, { duplicateWindowMs: 90_000, manage: true });
  assert.is(millis(changed.config.duplicate_window), 90_000);
  assert.ok(changed.state.messages > 0, 'data kept');
  const tooLong = await JetStreamEventLog.open({ connection: log.nc, ensureStream: false, publishRetryMs: 100_000 }).then(
    () => undefined,
    (e) => e,
  );
  assert.ok(isSessiondError(tooLong, ErrorCode.InvalidOption), 'a retry longer than the duplicate window is refused');
  const r3 = await ensureEventStream(jsm, { replicas: 3, manage: true, ...(admin.info?.version ? { serverVersion: admin.info.version } : {}) }).then(
    () => undefined,
    (e) => e,
  );
  assert.ok(isSessiondError(r3, ErrorCode.InvalidOption) && /JetStream cluster/.test(r3.message), 'replicas 3 outside a cluster: refused, clearly');
  await ensureEventStream(jsm, { manage: true });
  assert.is((await jsm.streams.info(STREAM_NAME)).config.num_replicas, 1);
  await admin.close();
});

s('connection options: defaults, and bad options named in the error', async () => {
  const o = parseConnectionOptions();
  assert.equal(o.servers, ['nats://127.0.0.1:4222']);
  assert.is(o.name, 'sessiond');
  assert.equal(parseConnectionOptions({ servers: 'nats://a:1, nats://b:2' }).servers, ['nats://a:1', 'nats://b:2']);
  for (const [bad, named] of [
    [{ servers: 'http://x:4222' }, 'servers'],
    [{ user: 'worker' }, 'pass'],
    [{ reconnectWaitMs: -5 }, 'reconnectWaitMs'],
    [{ timeoutMs: 1.5 }, 'timeoutMs'],
    [{ sever: 'nats://x:1' }, 'sever'],
  ] as [Record<string, unknown>, string][]) {
    const err = (() => {
      try {
        parseConnectionOptions(bad);
      } catch (e) {
        return e;
      }
    })();
    assert.ok(isSessiondError(err, ErrorCode.InvalidOption), `${named}: invalid_option`);
    assert.ok((err as Error).message.includes(named), `the error names ${named}: ${(err as Error).message}`);
  }
  const unreachable = await connectNats({ servers: `nats://127.0.0.1:${await freePort()}`, timeoutMs: 2000 }).then(
    () => undefined,
    (e) => e,
  );
  assert.ok(isSessiondError(unreachable, ErrorCode.Unavailable), 'a server that is not there is unavailable, not a bad option');
  assert.match((unreachable as Error).message, /Could not connect to NATS.*nats-server is running/);
});

s.run();
