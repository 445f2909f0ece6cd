/**
 * `sessiond inspect` as a real process: read-only over a log at rest (`--db`, a file a finished
 * engine wrote) and over a running fleet (`--nats`, as nats.conf's observer, beside a real worker
 * running sessions). It serves the inspector's API (sessions, a session, its conversation, time
 * travel, the chart, the page), follows what others write, refuses forks, takes no work and never
 * appends anything to the log. Bad input is a clear error.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import { openEngine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { ADMIN, CLIENT, OBSERVER, freePort, startNatsServer, workerNatsFlags } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import type { ConversationView } from '../../src/inspector/conversation-at.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { runCli, startCli, type LongRunning } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { storedEventRows } from '../support/stored-events.ts';
import { storedEvents } from '../../src/storage/sqlite/event-rows.ts';

const tmp = tempDir();
test.after(() => tmp.remove());

type Listed = { sessions: { sessionId: string; state: string; seq: number; pending: number; owner: string | null }[]; position: number; complete: boolean };

async function api<T = unknown>(base: string, path: string, init?: RequestInit): Promise<{ status: number; body: T }> {
  const res = await fetch(new URL(path, base), init);
  const type = res.headers.get('content-type') ?? '';
  return { status: res.status, body: (type.includes('json') ? await res.json() : await res.text()) as T };
}

/** Every event row of a database file, hashed (what "nothing appended, nothing changed" is checked on). */
function eventsHash(file: string): { count: number; hash: string } {
  const db = openDatabase(file, { readonly: true });
  try {
    const rows = storedEventRows(db);
    return { count: rows.length, hash: createHash('sha256').update(JSON.stringify(rows)).digest('hex') };
  } finally {
    db.close();
  }
}

async function stop(p: LongRunning): Promise<void> {
  p.child.kill('SIGTERM');
  assert.is(await p.exited, 0, p.output());
}

/** A `sessiond start --nats` worker serving commands, its projection in `db` (`extra`: more flags). */
function natsWorker(url: string, db: string, extra: string[] = []): LongRunning {
  return startCli(['start', ...workerNatsFlags(url), '--db', db, ...extra]);
}

/** GET every kind of route of the inspector for a session (a reader's whole visit). */
async function visit(base: string, sessionId: string, seq: number): Promise<void> {
  for (const path of [
    '/',
    '/api/sessions',
    `/api/sessions/${sessionId}`,
    `/api/sessions/${sessionId}/events?after=0`,
    `/api/sessions/${sessionId}/at/${seq}`,
    `/api/sessions/${sessionId}/conversation?seq=${seq}`,
    `/api/chart.svg?session=${sessionId}&seq=${seq}`,
  ])
    assert.is((await api(base, path)).status, 200, path);
}

test('sessiond inspect --db - serves a finished log read-only: the conversation, time travel; follows a prompt another process admits, runs nothing, appends nothing', async () => {
  const file = tmp.file('rest.db');
  const engine = await openEngine({ file, runner: echoRunner({ steps: 2 }) });
  await engine.admit('ses_rest', { prompt: 'hello from a log at rest' });
  await engine.awaitIdle('ses_rest');
  const events = await engine.log.readSession('ses_rest');
  await engine.close();
  const before = eventsHash(file);

  const port = await freePort();
  const inspect = startCli(['inspect', '--db', file, '--port', String(port)]);
  try {
    await inspect.waitFor(`sessiond inspector on http://127.0.0.1:${port}/ (read-only: it takes no work and writes nothing)`);
    const base = `http://127.0.0.1:${port}/`;
    const listed = await api<Listed>(base, '/api/sessions');
    assert.equal(
      listed.body.sessions.map((s) => [s.sessionId, s.state, s.seq]),
      [['ses_rest', 'settled', events.length]],
    );
    const conv = await api<ConversationView>(base, '/api/sessions/ses_rest/conversation');
    assert.equal(
      conv.body.entries.map((e) => e.kind),
      ['turn', 'prompt', 'step', 'step'],
    );
    assert.ok(JSON.stringify(conv.body).includes('echo: hello from a'));
    const mid = events.find((e) => e.type === 'step.started')!.seq;
    const travelled = await api<ConversationView>(base, `/api/sessions/ses_rest/conversation?seq=${mid}`);
    assert.equal(
      travelled.body.entries.map((e) => e.kind),
      ['turn', 'prompt', 'step'],
    );
    await visit(base, 'ses_rest', mid);
    const fork = await api<{ error: { code: string } }>(base, '/api/sessions/ses_rest/fork', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sessionId: 'ses_copy' }),
    });
    assert.equal([fork.status, fork.body.error.code], [405, 'read_only']);
    assert.equal(eventsHash(file), before, 'the inspector appended nothing and changed nothing');

    // another process admits a prompt: the inspector shows it pending, and nothing runs it
    const admitted = await runCli(['prompt', 'ses_new', 'is anyone there?', '--db', file]);
    assert.is(admitted.code, 0, admitted.stderr);
    await waitFor(async () => (await api<Listed>(base, '/api/sessions')).body.sessions.some((s) => s.sessionId === 'ses_new'), {
      what: 'the inspector to follow the new prompt',
    });
    const now = await api<Listed>(base, '/api/sessions');
    assert.ok(now.body.complete, 'folded up to the head of the log');
    assert.equal(
      now.body.sessions.filter((s) => s.sessionId === 'ses_new').map((s) => [s.state, s.pending, s.owner]),
      [['idle', 1, null]],
    );
    const queued = await api<ConversationView>(base, '/api/sessions/ses_new/conversation');
    assert.equal([queued.body.entries, queued.body.queued.map((q) => q.text.text)], [[], ['is anyone there?']]);
    assert.equal(eventsHash(file).count, before.count + 1, 'only the admission was appended (by sessiond prompt): no claim');
  } finally {
    await stop(inspect);
  }
  assert.match(inspect.output(), 'SIGTERM: inspector stopped');
  assert.equal(eventsHash(file).count, before.count + 1);
});

test("sessiond start keeps the inspector index in its file as the log grows: inspect --db resumes from it, not from the log's start", async () => {
  const file = tmp.file('kept.db');
  const worker = startCli(['start', '--db', file]);
  let head = 0;
  try {
    await worker.waitFor('send it a prompt');
    for (const n of [1, 2, 3]) {
      const admitted = await runCli(['prompt', 'ses_kept', `prompt number ${n}`, '--db', file]);
      assert.is(admitted.code, 0, admitted.stderr);
      await worker.waitFor(new RegExp(`(ses_kept  turn succeeded[^]*){${n}}`));
    }
    const db = openDatabase(file, { readonly: true });
    try {
      head = storedEvents(db).head();
      const kept = () => (db.prepare('SELECT MAX(position) FROM inspector_follow').pluck().get() as number | null) ?? 0;
      await waitFor(() => kept() >= head, { what: `the worker to keep the index up to log position ${head}` });
    } finally {
      db.close();
    }
  } finally {
    await stop(worker);
  }
  const port = await freePort();
  // the same file named another way (as from another folder) is the same log
  const inspect = startCli(['inspect', '--db', file.replace(/\/kept\.db$/, '/./kept.db'), '--port', String(port)]);
  try {
    await inspect.waitFor('  index: ');
    assert.match(inspect.output(), `index: the one the workers keep in the file (resumed after log position ${head}: reads only what the log gained since)`);
    const base = `http://127.0.0.1:${port}/`;
    const listed = await api<Listed>(base, '/api/sessions');
    assert.equal(
      listed.body.sessions.map((s) => [s.sessionId, s.state, s.pending]),
      [['ses_kept', 'settled', 0]],
      'the list, from the index at once',
    );
    const conv = await api<ConversationView>(base, '/api/sessions/ses_kept/conversation');
    assert.equal(conv.body.entries.filter((e) => e.kind === 'prompt').length, 3, 'every prompt in the conversation');
  } finally {
    await stop(inspect);
  }
});

test('sessiond inspect - a missing database, a file that is not sessiond, a bad port are clear errors', async () => {
  const missing = await runCli(['inspect', '--db', tmp.file('nothing-here.db')]);
  assert.is(missing.code, 2, missing.stderr);
  assert.match(missing.stderr, 'No database at');
  assert.match(missing.stderr, 'give --db the file a worker writes');
  const other = tmp.file('other.db');
  const plain = new Database(other);
  plain.exec('CREATE TABLE notes (text TEXT)');
  plain.close();
  const notOurs = await runCli(['inspect', '--db', other]);
  assert.is(notOurs.code, 2, notOurs.stderr);
  assert.match(notOurs.stderr, 'is not a sessiond database (it has no sessiond schema): point --db at a file sessiond created');
  const badPort = await runCli(['inspect', '--port', '70000']);
  assert.is(badPort.code, 2);
  assert.match(badPort.stderr, '--port must be a port from 1 to 65535 (got "70000")');
  const file = tmp.file('taken.db');
  const engine = await openEngine({ file, runner: echoRunner() });
  await engine.close();
  const port = await freePort();
  const first = startCli(['inspect', '--db', file, '--port', String(port)]);
  try {
    await first.waitFor('sessiond inspector on');
    const second = await runCli(['inspect', '--db', file, '--port', String(port)]);
    assert.is(second.code, 2, second.stderr);
    assert.match(second.stderr, `Cannot serve the inspector on 127.0.0.1:${port}: the address is in use. Pick another port`);
  } finally {
    await stop(first);
  }
});

test('sessiond inspect --nats - as the observer, beside a worker running sessions: follows them live, takes no work, appends nothing', async () => {
  const server = await startNatsServer();
  const as = (u: { user: string; pass: string }) => ['--nats', server.url, '--nats-user', u.user, '--nats-pass', u.pass];
  const started: LongRunning[] = [];
  try {
    const port = await freePort();
    const inspect = startCli(['inspect', ...as(OBSERVER), '--port', String(port), '--index', tmp.file('observer-index.db')]);
    started.push(inspect);
    await inspect.waitFor(`sessiond inspector on http://127.0.0.1:${port}/`);
    await inspect.waitFor(`over NATS ${server.url} as user observer (stream SESSIOND_EVENTS)`);
    const base = `http://127.0.0.1:${port}/`;
    const worker = natsWorker(server.url, tmp.file('worker.db'), ['--echo-delay-ms', '200']);
    started.push(worker);
    await worker.waitFor('send it a prompt');
    const ownerId = /sessiond worker (own_\w+) is running/.exec(worker.output())![1]!;

    for (const id of ['ses_n1', 'ses_n2']) {
      const r = await runCli(['prompt', id, `hello ${id} over nats`, ...as(CLIENT)]);
      assert.is(r.code, 0, r.stderr);
    }
    // live: the inspector sees a turn running, then both settled
    await waitFor(async () => (await api<Listed>(base, '/api/sessions')).body.sessions.some((s) => s.state === 'running'), {
      what: 'a running turn in the inspector',
      timeoutMs: 20_000,
    });
    await worker.waitFor('ses_n1  turn succeeded');
    await worker.waitFor('ses_n2  turn succeeded');
    await waitFor(
      async () => {
        const l = await api<Listed>(base, '/api/sessions');
        return l.body.sessions.length === 2 && l.body.sessions.every((s) => s.state === 'settled');
      },
      { what: 'both sessions settled in the inspector', timeoutMs: 20_000 },
    );
    const conv = await api<ConversationView>(base, '/api/sessions/ses_n1/conversation');
    assert.equal(
      conv.body.entries.map((e) => e.kind),
      ['turn', 'prompt', 'step', 'step', 'step'],
    );

    // the log as another reader sees it: every claim is the worker's; nothing more after the inspector's whole visit
    const reader = await JetStreamEventLog.open({ connection: { servers: server.url, ...OBSERVER }, ensureStream: false });
    try {
      const read = async () => {
        const all: SessionEvent[] = [];
        for (const id of ['ses_n1', 'ses_n2']) all.push(...(await reader.readSession(id)));
        return all;
      };
      const head = await reader.head();
      const events = await read();
      assert.ok(events.length > 0);
      assert.equal([...new Set(events.filter((e) => e.type === 'execution.claimed').map((e) => (e.payload as { ownerId: string }).ownerId))], [ownerId]);
      await visit(base, 'ses_n1', 3);
      await visit(base, 'ses_n2', events.filter((e) => e.sessionId === 'ses_n2').length);
      const fork = await api(base, '/api/sessions/ses_n1/fork', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"sessionId":"ses_f"}',
      });
      assert.is(fork.status, 405);
      assert.is(await reader.head(), head, 'nothing appended to the stream while the inspector served');
      assert.equal(await read(), events);
    } finally {
      await reader.close();
    }
    assert.not.match(inspect.output(), /claimed|turn succeeded/, 'the inspector ran nothing');
    await stop(worker);
    await stop(inspect);
  } finally {
    for (const p of started) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await server.dispose();
  }
});

test('sessiond inspect --nats --index - a second start resumes from the index file: only what the stream gained is read', async () => {
  const server = await startNatsServer();
  const as = (u: { user: string; pass: string }) => ['--nats', server.url, '--nats-user', u.user, '--nats-pass', u.pass];
  const index = tmp.file('kept-index.db');
  const started: LongRunning[] = [];
  const inspectOnce = async (expectSessions: string[]): Promise<{ out: string; listed: Listed }> => {
    const port = await freePort();
    const inspect = startCli(['inspect', ...as(OBSERVER), '--port', String(port), '--index', index]);
    started.push(inspect);
    await inspect.waitFor('  index: ');
    const base = `http://127.0.0.1:${port}/`;
    let listed: Listed | undefined;
    await waitFor(
      async () => {
        listed = (await api<Listed>(base, '/api/sessions')).body;
        return listed.complete && expectSessions.every((id) => listed!.sessions.some((s) => s.sessionId === id && s.state === 'settled'));
      },
      { what: `${expectSessions.join(', ')} settled in the inspector`, timeoutMs: 20_000 },
    );
    await stop(inspect);
    return { out: inspect.output(), listed: listed! };
  };
  try {
    const worker = natsWorker(server.url, tmp.file('worker-kept.db'));
    started.push(worker);
    await worker.waitFor('send it a prompt');
    const prompt = async (id: string) => {
      const r = await runCli(['prompt', id, `hello ${id}`, ...as(CLIENT)]);
      assert.is(r.code, 0, r.stderr);
      await worker.waitFor(`${id}  turn succeeded`);
    };
    const reader = await JetStreamEventLog.open({ connection: { servers: server.url, ...OBSERVER }, ensureStream: false });
    try {
      await prompt('ses_k1');
      const first = await inspectOnce(['ses_k1']);
      assert.match(first.out, `index: ${index} (new: follows the log from its start)`);
      const keptAt = await reader.head();
      await prompt('ses_k2');
      const second = await inspectOnce(['ses_k1', 'ses_k2']);
      assert.match(second.out, `index: ${index} (resumed after log position ${keptAt}: reads only what the log gained since)`);
      assert.ok(keptAt < (await reader.head()), 'the stream gained events while no inspector followed it');
      assert.equal(
        second.listed.sessions.map((s) => [s.sessionId, s.state, s.seq]).sort(),
        [
          ['ses_k1', 'settled', (await reader.readSession('ses_k1')).length],
          ['ses_k2', 'settled', (await reader.readSession('ses_k2')).length],
        ],
        'the sessions kept and those the stream gained',
      );
    } finally {
      await reader.close();
    }
    await stop(worker);
  } finally {
    for (const p of started) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await server.dispose();
  }
});

test('sessiond inspect --nats --index - a session the admin deletes leaves the list and the index file, and a restart', async () => {
  const server = await startNatsServer();
  const as = (u: { user: string; pass: string }) => ['--nats', server.url, '--nats-user', u.user, '--nats-pass', u.pass];
  const index = tmp.file('deleted-index.db');
  const started: LongRunning[] = [];
  const inspect = async () => {
    const port = await freePort();
    const p = startCli(['inspect', ...as(OBSERVER), '--port', String(port), '--index', index]);
    started.push(p);
    await p.waitFor('  index: ');
    return { p, base: `http://127.0.0.1:${port}/` };
  };
  const listedIds = async (base: string) => (await api<Listed>(base, '/api/sessions')).body.sessions.map((s) => s.sessionId).sort();
  const kept = (sessionId: string) => {
    const db = new Database(index, { readonly: true });
    try {
      return ['inspector_head', 'inspector_checkpoint', 'inspector_mark', 'inspector_timeline'].map(
        (table) => (db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE session_id = ?`).get(sessionId) as { n: number }).n,
      );
    } finally {
      db.close();
    }
  };
  try {
    const worker = natsWorker(server.url, tmp.file('worker-del.db'));
    started.push(worker);
    await worker.waitFor('send it a prompt');
    for (const id of ['ses_stays', 'ses_gone']) {
      const r = await runCli(['prompt', id, `hello ${id}`, ...as(CLIENT)]);
      assert.is(r.code, 0, r.stderr);
      await worker.waitFor(`${id}  turn succeeded`);
    }
    const first = await inspect();
    await waitFor(async () => (await listedIds(first.base)).length === 2, { what: 'both sessions listed', timeoutMs: 20_000 });
    const deleted = await runCli(['delete', 'ses_gone', '--yes', ...as(ADMIN)]);
    assert.is(deleted.code, 0, deleted.stderr);
    await waitFor(async () => (await listedIds(first.base)).join() === 'ses_stays', { what: 'the deleted session to leave the list', timeoutMs: 20_000 });
    assert.is((await api(first.base, '/api/sessions/ses_gone')).status, 404);
    await stop(first.p);
    assert.equal(kept('ses_gone'), [0, 0, 0, 0], 'nothing of it in the index file');
    assert.ok(kept('ses_stays')[0]! > 0, 'the other session kept');
    const second = await inspect();
    await waitFor(async () => (await api<Listed>(second.base, '/api/sessions')).body.complete, { what: 'the restart to follow', timeoutMs: 20_000 });
    assert.equal(await listedIds(second.base), ['ses_stays'], 'a restart does not bring it back');
    await stop(second.p);
    await stop(worker);
  } finally {
    for (const p of started) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await server.dispose();
  }
});

test.run();
