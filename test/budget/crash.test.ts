/**
 * A budget holds exactly once across a failover: real worker processes on one SQLite file, the
 * first SIGKILLed while its turn waits on a model request. A session's spend comes from the log, a
 * tenant's from the store the workers share (each call counted once, as it ended), so the
 * continuation on the second worker counts what its predecessor spent and is refused before any
 * model call (`budget_exceeded`); the model server never sees another request. (On NATS:
 * test/nats/tenant-budget.test.ts.)
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fileURLToPath } from 'node:url';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { startFakeOpenAI } from '../../src/testing/fake-openai.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { logSessions } from '../../src/sessions/log-sessions.ts';

const TOOLS = fileURLToPath(new URL('../runner/fixtures/tools.ts', import.meta.url));

async function readEvents(db: string, sessionId: string): Promise<SessionEvent[]> {
  const handle = openDatabase(db, { readonly: true });
  try {
    return await new SqliteEventLog(handle).readSession(sessionId);
  } finally {
    handle.close();
  }
}

test('budget - a worker SIGKILLed mid-turn: the continuation counts the spent tokens and stops before a model call', async () => {
  const tmp = tempDir();
  const server = await startFakeOpenAI();
  const db = tmp.file('budget.db');
  const flags = ['start', '--db', db, '--runner', 'openai', '--model', 'fake-model', '--base-url', server.url, '--tools', TOOLS];
  const fast = ['--lease-ms', '1500', '--heartbeat-ms', '500', '--sweep-ms', '300'];
  // the first call spends 250 tokens and asks for a note; the second never answers
  server.script(
    { kind: 'toolCalls', calls: [{ id: 'call_n1', name: 'note', arguments: { text: 'one' } }], usage: { prompt_tokens: 200, completion_tokens: 50 } },
    { kind: 'hang' },
  );
  const env = { NOTES_FILE: tmp.file('notes.log') };
  const a = startCli([...flags, ...fast], { env });
  let b: ReturnType<typeof startCli> | undefined;
  try {
    await a.waitFor('send it a prompt');
    await runCli(['prompt', 'ses_bk', 'take notes', '--db', db]);
    await waitFor(() => server.requests.length === 2, { what: 'the second model request to hang', timeoutMs: 20_000 });
    // the admin sets a budget the session has already passed, while the turn waits on the model
    const set = await runCli(['budget', 'ses_bk', '--tokens', '200', '--db', db]);
    assert.is(set.code, 0, set.stderr);
    assert.match(set.stdout, 'spent 250 of 200 tokens');
    a.child.kill('SIGKILL');
    await a.exited;
    b = startCli([...flags, ...fast], { env });
    await waitFor(async () => (await readEvents(db, 'ses_bk')).filter((e) => e.type === 'execution.settled').length === 1, {
      what: 'the continuation to settle',
      timeoutMs: 20_000,
    });
    const events = await readEvents(db, 'ses_bk');
    assert.is(events.filter((e) => e.type === 'recovery.completed').length, 1, 'the first turn was recovered');
    const settled = events.find((e): e is SessionEvent<'execution.settled'> => e.type === 'execution.settled')!;
    assert.is(settled.payload.outcome, 'failed');
    assert.is(settled.payload.error?.type, 'budget_exceeded');
    assert.match(settled.payload.error!.message, '250 tokens spent of a tokens budget of 200 tokens');
    assert.is(server.requests.length, 2, 'the continuation sent no model request');
    const status = await runCli(['status', 'ses_bk', '--db', db]);
    assert.match(status.stdout, /why\s+budget_exceeded: Session ses_bk has spent its budget/);
    assert.match(status.stdout, 'budget  250 of 200 tokens spent');
  } finally {
    a.child.kill('SIGKILL');
    b?.child.kill('SIGTERM');
    await b?.exited;
    await server.close();
    tmp.remove();
  }
});

test("budget - a tenant's budget across a SIGKILL: the continuation and the tenant's next session are refused, the spend counted once", async () => {
  const tmp = tempDir();
  const server = await startFakeOpenAI();
  const db = tmp.file('tenant.db');
  const flags = ['start', '--db', db, '--runner', 'openai', '--model', 'fake-model', '--base-url', server.url, '--tools', TOOLS];
  const fast = ['--lease-ms', '1500', '--heartbeat-ms', '500', '--sweep-ms', '300'];
  server.script(
    { kind: 'toolCalls', calls: [{ id: 'call_t1', name: 'note', arguments: { text: 'one' } }], usage: { prompt_tokens: 200, completion_tokens: 50 } },
    { kind: 'hang' },
  );
  const env = { NOTES_FILE: tmp.file('notes.log') };
  const file = openDatabase(db);
  migrate(file);
  const sessions = logSessions(new SqliteEventLog(file));
  const set = await runCli(['budget', '--tenant', 'acme', '--tokens', '400', '--db', db]);
  assert.is(set.code, 0, set.stderr);
  assert.match(set.stdout, 'tenant acme (budget set): spent 0 of 400 tokens');
  const a = startCli([...flags, ...fast], { env });
  let b: ReturnType<typeof startCli> | undefined;
  try {
    await a.waitFor('send it a prompt');
    await sessions.admit('ses_t1', { prompt: 'take notes', owner: 'acme' });
    await waitFor(() => server.requests.length === 2, { what: 'the second model request to hang', timeoutMs: 20_000 });
    // the first call was counted as it ended; the admin lowers the budget under it while the turn waits
    const lowered = await runCli(['budget', '--tenant', 'acme', '--tokens', '200', '--db', db]);
    assert.is(lowered.code, 0, lowered.stderr);
    assert.match(lowered.stdout, 'spent 250 of 200 tokens');
    a.child.kill('SIGKILL');
    await a.exited;
    b = startCli([...flags, ...fast], { env });
    const settled = async (id: string) => (await readEvents(db, id)).find((e): e is SessionEvent<'execution.settled'> => e.type === 'execution.settled');
    await waitFor(async () => (await settled('ses_t1')) !== undefined, { what: 'the continuation to settle', timeoutMs: 20_000 });
    assert.is((await readEvents(db, 'ses_t1')).filter((e) => e.type === 'recovery.completed').length, 1, 'the first turn was recovered');
    const first = (await settled('ses_t1'))!;
    assert.is(first.payload.error?.type, 'budget_exceeded');
    assert.match(
      first.payload.error!.message,
      'Tenant acme (the owner of session ses_t1) has spent its budget: 250 tokens spent of a tokens budget of 200 tokens',
    );
    await sessions.admit('ses_t2', { prompt: 'another', owner: 'acme' });
    await waitFor(async () => (await settled('ses_t2')) !== undefined, { what: "the tenant's next session to settle", timeoutMs: 20_000 });
    assert.is((await settled('ses_t2'))!.payload.error?.type, 'budget_exceeded');
    assert.is(server.requests.length, 2, 'neither the continuation nor the next session sent a model request');
    const shown = await runCli(['budget', '--tenant', 'acme', '--json', '--db', db]);
    assert.equal(JSON.parse(shown.stdout).budget.spent, { tokens: 250, costUsd: 0 }, 'the spend counted once');
    const status = await runCli(['status', 'ses_t2', '--db', db]);
    assert.match(status.stdout, "tenant budget  250 of 200 tokens spent by acme's sessions (sessiond budget --tenant acme)");
  } finally {
    a.child.kill('SIGKILL');
    b?.child.kill('SIGTERM');
    await b?.exited;
    await sessions.close();
    if (file.open) file.close();
    await server.close();
    tmp.remove();
  }
});

test.run();
