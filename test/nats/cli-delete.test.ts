/**
 * Deleting sessions over NATS, as real processes on the pinned nats-server with real workers:
 * `sessiond delete --nats` as the admin purges the session's subject, drops its snapshot and records
 * the deletion on SESSIOND_AUDIT; the running worker drops its projection rows; `check` and `export`
 * pass without it; the id starts again at seq 1; a worker started later catches up on the audit; a
 * worker's or client's purge is refused by nats.conf; `retain --nats` archives then deletes.
 */
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { jetstreamManager } from '@nats-io/jetstream';
import { as, cliSuite, natsWorker, type CliCtx } from './cli-suite.ts';
import { ADMIN, CLIENT, WORKER, startNatsServer } from '../../src/testing/nats-server.ts';
import { eventStreamConfig } from '../../src/nats/stream.ts';
import { setupSnapshotStream } from '../../src/nats/snapshot-store.ts';
import { runCli } from '../support/cli.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { STREAM_NAME, subjects } from '../../src/nats/subjects.ts';
import { AUDIT_DELETED } from '../../src/nats/deletion-stream.ts';
import { refusedPublish, rejection } from './helpers.ts';

async function ok(args: string[]): Promise<string> {
  const r = await runCli(args);
  assert.is(r.code, 0, `sessiond ${args.join(' ')}: ${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** Rows a worker's projection holds of a session (sessions, messages), read from its file. */
function rows(file: string, sessionId: string): { session: { state: string; last_seq: number } | undefined; messages: number; deletions: number } {
  const db = openDatabase(file, { readonly: true });
  try {
    return {
      session: db.prepare('SELECT state, last_seq FROM session WHERE session_id = ?').get(sessionId) as { state: string; last_seq: number } | undefined,
      messages: (db.prepare('SELECT COUNT(*) AS n FROM session_message WHERE session_id = ?').get(sessionId) as { n: number }).n,
      deletions: (db.prepare('SELECT COUNT(*) AS n FROM session_deletion WHERE session_id = ?').get(sessionId) as { n: number }).n,
    };
  } finally {
    db.close();
  }
}

/** The worker projected the session between turns at or past a seq. */
const idleIn = (file: string, sessionId: string, lastSeqAtLeast = 1) => {
  const r = rows(file, sessionId).session;
  return r !== undefined && (r.state === 'idle' || r.state === 'settled') && r.last_seq >= lastSeqAtLeast;
};

async function withLog<T>(ctx: CliCtx, use: (log: JetStreamEventLog) => Promise<T>): Promise<T> {
  const log = await JetStreamEventLog.open({ connection: { servers: ctx.server.url, ...WORKER }, ensureStream: false });
  try {
    return await use(log);
  } finally {
    await log.close();
  }
}

const s = cliSuite('sessiond delete over NATS');

s(
  'delete --nats as admin: purged from the stream, gone from the worker projection, audited; check and export pass; the id starts again at seq 1; a later worker catches up',
  async (ctx) => {
    const url = ctx.server.url;
    const client = ['--nats', url, ...as(CLIENT)];
    const admin = ['--nats', url, ...as(ADMIN)];
    const workerDb = ctx.tmp.file('del-worker.db');
    const worker = await natsWorker(ctx, 'del-worker.db', 0);
    await ok(['prompt', 'ses_gone', 'private words to erase', ...client]);
    await ok(['prompt', 'ses_kept', 'words to keep', ...client]);
    await waitFor(() => idleIn(workerDb, 'ses_gone', 3) && idleIn(workerDb, 'ses_kept', 3), { timeoutMs: 20_000, what: 'both sessions projected idle' });
    const before = await withLog(ctx, (log) => log.readSession('ses_gone'));
    assert.ok(before.length >= 3);

    // a worker or client may not delete, even through the CLI
    const byClient = await runCli(['delete', 'ses_gone', '--yes', ...client]);
    assert.is.not(byClient.code, 0, byClient.stdout);
    const done = await ok(['delete', 'ses_gone', '--yes', '--reason', 'GDPR request 9', '--by', 'dpo@example.com', ...admin]);
    assert.match(
      done,
      new RegExp(`^deleted ses_gone \\(${before.length} events, last seq ${before.length}\\) at 20\\d\\d-[^ ]+ by dpo@example\\.com: GDPR request 9\\n$`),
    );

    await withLog(ctx, async (log) => {
      assert.equal(await log.readSession('ses_gone'), [], 'the session is gone from the stream');
      assert.is(await log.lastSeq('ses_gone'), 0);
      assert.ok((await log.readSession('ses_kept')).length >= 3, 'the other session is untouched');
      const jsm = await jetstreamManager(log.nc);
      assert.is(await jsm.streams.getMessage('SESSIOND_SNAPSHOTS', { last_by_subj: 'sessiond.snapshots.ses_gone' }), null, 'no snapshot left');
    });
    await waitFor(
      () => {
        const r = rows(workerDb, 'ses_gone');
        return r.session === undefined && r.messages === 0 && r.deletions === 1;
      },
      { timeoutMs: 10_000, what: "the worker dropped the session's rows" },
    );
    assert.ok(rows(workerDb, 'ses_kept').messages > 0, 'the kept session keeps its rows');
    await waitFor(() => worker.output().includes('ses_gone  deleted by dpo@example.com'), { what: 'the worker says so' });

    const audit = (await ok(['deletions', '--json', ...admin]))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(
      audit.map((r) => [r.sessionId, r.deletedBy, r.reason, r.events, r.stream]),
      [['ses_gone', 'dpo@example.com', 'GDPR request 9', before.length, STREAM_NAME]],
    );
    assert.ok(audit[0].headPosition >= before.at(-1)!.position!, 'the stream sequence at the delete');
    assert.not.match(JSON.stringify(audit), 'private words', 'never the content');

    await ok(['check', ...client]);
    const file = ctx.tmp.file('after.sdx');
    const exported = await runCli(['export', '--out', file, ...client]);
    assert.is(exported.code, 0, exported.stderr);
    assert.not.match(exported.stderr, 'warn');
    const bytes = readFileSync(file).toString('latin1');
    assert.not.ok(bytes.includes('private words'), 'the export does not have it');
    assert.ok(bytes.includes('words to keep'));

    // again: nothing to delete
    const again = await runCli(['delete', 'ses_gone', '--yes', ...admin]);
    assert.is(again.code, 66, again.stderr);

    // the id starts again from seq 1, and is projected as new
    await ok(['prompt', 'ses_gone', 'a new life', ...client]);
    await waitFor(() => idleIn(workerDb, 'ses_gone', 3), { timeoutMs: 20_000, what: 'the new session projected' });
    const reborn = await withLog(ctx, (log) => log.readSession('ses_gone'));
    assert.is(reborn[0]!.seq, 1);
    assert.ok(reborn[0]!.position! > audit[0].headPosition);
    assert.is(rows(workerDb, 'ses_gone').deletions, 1);

    // a worker started later catches up on the audit (and projects the new session only)
    const lateDb = ctx.tmp.file('late-worker.db');
    await natsWorker(ctx, 'late-worker.db', 0);
    await waitFor(() => rows(lateDb, 'ses_gone').deletions === 1 && idleIn(lateDb, 'ses_gone', 3), { timeoutMs: 20_000, what: 'the late worker caught up' });
    assert.is(rows(lateDb, 'ses_gone').session!.last_seq, reborn.at(-1)!.seq);
    await ok(['check', ...client]);
  },
);

s('a worker or client may not purge the events stream nor write the audit (nats.conf); the admin may', async (ctx) => {
  for (const user of [WORKER, CLIENT]) {
    const nc = await connectNats({ servers: ctx.server.url, ...user });
    try {
      const jsm = await jetstreamManager(nc);
      const err = await rejection(jsm.streams.purge(STREAM_NAME, { filter: subjects.events('ses_kept') }));
      assert.match(String(err), /permission/i, `${user.user}: ${String(err)}`);
      const refused = await refusedPublish(nc, AUDIT_DELETED, () => nc.publish(AUDIT_DELETED, '{"sessionId":"ses_kept"}'));
      assert.is(refused.subject, AUDIT_DELETED);
    } finally {
      await nc.close();
    }
  }
  await withLog(ctx, async (log) => assert.ok((await log.readSession('ses_kept')).length >= 3, 'nothing was purged'));
});

s('retain --nats: dry run lists; --archive exports then deletes the sessions between turns last changed before the time', async (ctx) => {
  const url = ctx.server.url;
  const client = ['--nats', url, ...as(CLIENT)];
  const admin = ['--nats', url, ...as(ADMIN)];
  const workerDb = ctx.tmp.file('ret-worker.db');
  const running = ctx.workers.filter((w) => w.child.exitCode === null);
  if (running.length === 0) await natsWorker(ctx, 'ret-worker.db', 0);
  const projection = running.length === 0 ? workerDb : ctx.tmp.file('del-worker.db');
  for (const id of ['ses_ret_1', 'ses_ret_2']) await ok(['prompt', id, `old words of ${id}`, ...client]);
  await ok(['prompt', 'ses_ret_queued', 'never ran', '--no-wake', ...client]);
  await waitFor(() => idleIn(projection, 'ses_ret_1', 3) && idleIn(projection, 'ses_ret_2', 3), { timeoutMs: 20_000, what: 'old sessions idle' });
  await waitFor(() => rows(projection, 'ses_ret_queued').session !== undefined, { what: 'the queued one projected' });
  const cut = new Date(Date.now() + 1).toISOString();
  await waitFor(() => Date.now() > Date.parse(cut) + 1, { what: 'the cut passed' });
  // newer than the cut: kept; the earlier test's sessions changed before it, so they go too
  const keptAt = rows(projection, 'ses_kept').session?.last_seq ?? 0;
  await ok(['prompt', 'ses_ret_new', 'recent', ...client]);
  await ok(['prompt', 'ses_kept', 'recent too', ...client]);
  await waitFor(() => idleIn(projection, 'ses_ret_new', 3) && idleIn(projection, 'ses_kept', keptAt + 3), { timeoutMs: 20_000, what: 'recent sessions idle' });

  const dry = await ok(['retain', '--settled-before', cut, '--dry-run', ...admin]);
  const listed = dry
    .split('\n')
    .filter((l) => l.startsWith('  '))
    .map((l) => l.trim());
  assert.ok(listed.includes('ses_ret_1') && listed.includes('ses_ret_2'), dry);
  for (const kept of ['ses_ret_new', 'ses_kept', 'ses_ret_queued']) assert.not.ok(listed.includes(kept), `${kept} is not listed: ${dry}`);

  const archive = ctx.tmp.file('ret.sdx');
  const kept = await ok(['retain', '--settled-before', cut, '--archive', archive, '--yes', ...admin]);
  assert.match(kept, new RegExp(`archived ${listed.length} sessions \\(\\d+ events\\) to .*ret\\.sdx`));
  assert.match(kept, /deleted ses_ret_1 .* retention: last changed before .*; archived to .*ret\.sdx/);
  await withLog(ctx, async (log) => {
    for (const id of listed) assert.equal(await log.readSession(id), [], `${id} is gone`);
    for (const id of ['ses_ret_new', 'ses_kept', 'ses_ret_queued']) assert.ok((await log.readSession(id)).length > 0, `${id} stays`);
  });
  await waitFor(() => rows(projection, 'ses_ret_1').session === undefined && rows(projection, 'ses_ret_2').session === undefined, {
    timeoutMs: 10_000,
    what: 'the worker dropped them',
  });
  const copy = ctx.tmp.file('ret-copy.db');
  await ok(['replay', archive, '--db', copy]);
  assert.match(await ok(['status', 'ses_ret_1', '--db', copy]), 'ses_ret_1');
  await ok(['check', ...client]);
});

s.run();

const old = cliSuite('a stream set up by an older sessiond (deny purge, no audit stream)');
old.before(async (ctx) => {
  // replace the suite's server by one whose streams are as the older setup made them
  await ctx.server.dispose();
  ctx.server = await startNatsServer({ streams: false });
  const nc = await connectNats({ servers: ctx.server.url, ...ADMIN });
  try {
    const jsm = await jetstreamManager(nc);
    await setupSnapshotStream(jsm);
    await jsm.streams.add({ ...eventStreamConfig(), deny_purge: true });
  } finally {
    await nc.close();
  }
});

old(
  'a worker and setup accept it (nats-server will not lift deny purge); delete over NATS is refused saying why, nothing deleted; setup creates the audit stream, which a new worker follows',
  async (ctx) => {
    const url = ctx.server.url;
    const client = ['--nats', url, ...as(CLIENT)];
    const admin = ['--nats', url, ...as(ADMIN)];
    const worker = await natsWorker(ctx, 'old-worker.db', 0);
    assert.match(worker.output(), 'not following deletions');
    await ok(['prompt', 'ses_old', 'hello', ...client]);
    await waitFor(() => idleIn(ctx.tmp.file('old-worker.db'), 'ses_old', 3), { timeoutMs: 20_000, what: 'the session projected' });
    const refused = await runCli(['delete', 'ses_old', '--yes', ...admin]);
    assert.is(refused.code, 2, refused.stdout + refused.stderr); // invalid_option: a usage-kind error
    assert.match(refused.stderr, 'nats-server will not lift deny purge on an existing stream');
    await withLog(ctx, async (log) => assert.ok((await log.readSession('ses_old')).length >= 3, 'nothing deleted'));
    const setup = await ok(['setup', ...admin]);
    assert.match(setup, 'stream SESSIOND_EVENTS unchanged');
    assert.match(setup, 'stream SESSIOND_AUDIT created');
    assert.match(setup, 'deny purge true');
    assert.match(setup, 'cannot delete sessions from it');
    const fresh = await natsWorker(ctx, 'new-worker.db', 0);
    assert.not.match(fresh.output(), 'not following deletions');
    const still = await runCli(['retain', '--settled-before', '1d', '--yes', ...admin]);
    assert.is(still.code, 2, still.stdout + still.stderr);
    assert.match(still.stderr, 'denies purge');
  },
);

old.run();
