/**
 * `sessiond start --max-model-calls N`, real processes on one SQLite file against a real HTTP model
 * server (the fake OpenAI-compatible one, which counts the requests it answers at once):
 * - two workers with a limit of 2 and 8 sessions at once: the server never sees more than 2 in
 *   flight, calls past the limit wait (said in the worker's log, in `sessiond limits` and in
 *   `sessiond status`), and every turn finishes;
 * - a worker SIGKILLed while its call holds the only slot: the slot is freed by its lease and the
 *   other worker's waiting call goes out;
 * - a tenant flooding calls does not delay another tenant's single call past its fair share: the
 *   single call is among the next few the server sees, not behind the flood.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { waitFor } from '../../src/testing/wait.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../src/testing/fake-openai.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { logSessions } from '../../src/sessions/log-sessions.ts';
import { runCli, startCli, type LongRunning } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

/** Each answer streams a few chunks `delayMs` apart, so calls overlap. */
const slowEcho = (delayMs: number) => () => ({ kind: 'text' as const, text: ['one ', 'two ', 'three'], delayMs });

function worker(db: string, llm: FakeOpenAI, extra: string[] = []): LongRunning {
  return startCli(['start', '--db', db, '--runner', 'openai', '--model', 'fake-model', '--base-url', llm.url, '--sweep-ms', '200', ...extra], {
    env: { OPENAI_API_KEY: '' },
  });
}

async function stop(workers: LongRunning[]): Promise<void> {
  for (const w of workers) {
    if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGTERM');
    await w.exited;
  }
}

async function outcome(db: string, id: string): Promise<string | null | undefined> {
  const status = await runCli(['status', id, '--db', db, '--json']);
  return status.code === 0 ? JSON.parse(status.stdout).execution?.outcome : undefined;
}

test('max model calls - two workers with --max-model-calls 2 on one file, 8 sessions at once: never more than 2 calls in flight, all finish', async () => {
  const tmp = tempDir();
  const db = tmp.file('w.db');
  // the calls that start before the test has seen the limit full take long (CLI start-ups under
  // load can outlast fast turns); once it has, the rest are quick
  let seenFull = false;
  const llm = await startFakeOpenAI({ defaultReply: () => slowEcho(seenFull ? 60 : 2_000)() });
  const bad = await runCli(['start', '--db', db, '--max-model-calls', '0']);
  assert.is(bad.code, 2, bad.stdout + bad.stderr);
  assert.match(bad.stderr, '--max-model-calls');
  const workers = [worker(db, llm, ['--max-model-calls', '2']), worker(db, llm, ['--max-model-calls', '2'])];
  try {
    for (const w of workers) await w.waitFor('limits on model calls, shared by every worker');
    const ids = Array.from({ length: 8 }, (_, i) => `ses_cap${i}`);
    const prompts = await Promise.all(ids.map((id) => runCli(['prompt', id, 'go', '--db', db])));
    for (const p of prompts) assert.is(p.code, 0, p.stdout + p.stderr);
    // while calls wait: `sessiond limits` shows the limit full, and a waiting session's status says so
    let shown = '';
    await waitFor(
      async () => {
        const limits = await runCli(['limits', '--db', db]);
        shown = limits.stdout;
        return /model:fake-model\s+2 of 2 in flight, [1-9]\d* waiting/.test(limits.stdout);
      },
      { what: '`sessiond limits` to show the limit full with calls waiting', timeoutMs: 20_000, intervalMs: 50 },
    ).catch((err: unknown) => assert.unreachable(`${String(err)}\nlast output:\n${shown}`));
    seenFull = true;
    for (const id of ids) await waitFor(async () => (await outcome(db, id)) === 'succeeded', { what: `${id} succeeded`, timeoutMs: 60_000, intervalMs: 100 });
    assert.ok(llm.requests.filter((r) => r.chat).length >= 8, 'each session made its call');
    assert.ok(llm.mostInFlight <= 2, `the server saw ${llm.mostInFlight} calls at once, over the limit of 2`);
    assert.is(llm.mostInFlight, 2, 'the limit was used');
    assert.ok(
      workers.some((w) => w.output().includes('a model call waits for room: model:fake-model')),
      `a worker said a call waits for room:\n${workers.map((w) => w.output()).join('\n')}`,
    );
  } finally {
    await stop(workers);
    await llm.close();
    tmp.remove();
  }
});

test('max model calls - a worker SIGKILLed holding the only slot: its lease frees the slot and the other worker runs both turns', async () => {
  const tmp = tempDir();
  const db = tmp.file('w.db');
  const llm = await startFakeOpenAI({ defaultReply: slowEcho(5) });
  llm.script({ kind: 'hang' }); // the first call never ends while its worker lives
  const lease = ['--max-model-calls', '1', '--lease-ms', '1500', '--heartbeat-ms', '500'];
  const first = worker(db, llm, lease);
  let second: LongRunning | undefined;
  try {
    await first.waitFor('limits on model calls, shared by every worker');
    assert.is((await runCli(['prompt', 'ses_held', 'go', '--db', db])).code, 0);
    await llm.waitForRequest(1, 20_000); // the first worker holds the slot, in a call that hangs
    second = worker(db, llm, lease);
    await second.waitFor('limits on model calls, shared by every worker');
    assert.is((await runCli(['prompt', 'ses_queued', 'go', '--db', db])).code, 0);
    // whichever worker claimed it, its call waits for the slot the first one holds
    const queued = [first, second];
    await waitFor(() => queued.some((w) => w.output().includes('ses_queued  a model call waits for room')), {
      what: 'the second call to wait for room',
      timeoutMs: 20_000,
    });
    first.child.kill('SIGKILL');
    await first.exited;
    // the slot goes with the dead worker's lease: the queued call goes out, and the held turn is recovered
    for (const id of ['ses_queued', 'ses_held'])
      await waitFor(async () => (await outcome(db, id)) === 'succeeded', { what: `${id} succeeded`, timeoutMs: 30_000, intervalMs: 100 });
    assert.ok(llm.mostInFlight <= 1, `the server saw ${llm.mostInFlight} calls at once, over the limit of 1`);
  } finally {
    await stop([first, ...(second ? [second] : [])]);
    await llm.close();
    tmp.remove();
  }
});

test('max model calls - a tenant flooding 200 calls does not hold back another tenant: its one call goes within the next few', async () => {
  const tmp = tempDir();
  const db = tmp.file('w.db');
  const llm = await startFakeOpenAI({ defaultReply: slowEcho(10) });
  const file = openDatabase(db);
  migrate(file);
  const sessions = logSessions(new SqliteEventLog(file));
  const limit = 2;
  const w = worker(db, llm, ['--max-model-calls', String(limit)]);
  try {
    await w.waitFor('limits on model calls, shared by every worker');
    for (let i = 0; i < 200; i++) await sessions.admit(`ses_flood${i}`, { prompt: `flood ${i}`, owner: 'flood' });
    // the flood's calls queue up behind the limit
    await waitFor(() => (w.output().match(/a model call waits for room/g) ?? []).length >= 50, {
      what: 'the flood to queue',
      timeoutMs: 60_000,
      intervalMs: 50,
    });
    await sessions.admit('ses_solo', { prompt: 'solo', owner: 'solo' });
    await w.waitFor('ses_solo  a model call waits for room', 30_000);
    const before = llm.requests.length; // the calls that went before it asked for room
    await waitFor(() => llm.requests.some((r) => JSON.stringify(r.chat?.messages ?? []).includes('solo')), {
      what: "the other tenant's call",
      timeoutMs: 60_000,
      intervalMs: 20,
    });
    const at = llm.requests.findIndex((r) => JSON.stringify(r.chat?.messages ?? []).includes('solo')) + 1;
    const flooded = llm.requests.slice(0, at).filter((r) => JSON.stringify(r.chat?.messages ?? []).includes('flood')).length;
    // fair: it takes one of the next free slots (the calls in flight when it asked end first)
    assert.ok(at <= before + limit + 1, `the other tenant's call was request #${at}; ${before} had arrived when it was admitted`);
    assert.ok(flooded < 150, `the flood had not all gone first (${flooded} flood calls before it)`);
    await waitFor(async () => (await outcome(db, 'ses_solo')) === 'succeeded', { what: 'ses_solo succeeded', timeoutMs: 30_000 });
  } finally {
    await stop([w]);
    await sessions.close();
    file.close();
    await llm.close();
    tmp.remove();
  }
});

test.run();
