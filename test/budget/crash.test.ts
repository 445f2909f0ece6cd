/**
 * A budget holds exactly once across a failover: real worker processes on one SQLite file, the
 * first SIGKILLed while its turn waits on a model request. Spend comes from the log, so the
 * continuation on the second worker counts what its predecessor spent and is refused before any
 * model call (`budget_exceeded`); the model server never sees another request.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fileURLToPath } from 'node:url';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { startFakeOpenAI } from '../../src/testing/fake-openai.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { openDatabase } from '../../src/storage/sqlite.ts';
import { SqliteEventLog } from '../../src/storage/sqlite-event-log.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';

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

test.run();
