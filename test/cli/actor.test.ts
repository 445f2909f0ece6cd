/**
 * Who did it, from the command line (real processes): `sessiond cancel --pending` records `--by`
 * (default user@host) as the actor of its `input.dropped`; an empty one is refused. `sessiond
 * status` in words names who decided the turn's waits and who cancelled it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hostname, userInfo } from 'node:os';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { runCli } from '../support/cli.ts';
import { openEngine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { describeStatus } from '../../src/cli/commands/status.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
test.after(() => tmp.remove());

async function dropsOf(db: string, sessionId: string): Promise<unknown[]> {
  const d = openDatabase(db, { readonly: true });
  try {
    const events = await new SqliteEventLog(d).readSession(sessionId);
    return events.filter((e) => e.type === 'input.dropped').map((e) => (e.payload as { actor?: string }).actor);
  } finally {
    d.close();
  }
}

test('cli actor - cancel --pending records --by, or user@host without it; a bad --by is refused', async () => {
  const db = tmp.file('actor.db');
  for (const id of ['ses_a1', 'ses_a2']) assert.is((await runCli(['prompt', id, 'later', '--no-wake', '--db', db])).code, 0);
  const by = await runCli(['cancel', 'ses_a1', '--pending', '--by', 'ops@example.com', '--db', db]);
  assert.is(by.code, 0, by.stderr);
  assert.equal(await dropsOf(db, 'ses_a1'), ['ops@example.com']);
  const me = await runCli(['cancel', 'ses_a2', '--pending', '--db', db]);
  assert.is(me.code, 0, me.stderr);
  assert.equal(await dropsOf(db, 'ses_a2'), [`${userInfo().username}@${hostname()}`]);
  assert.is((await runCli(['prompt', 'ses_a2', 'again', '--no-wake', '--db', db])).code, 0);
  const bad = await runCli(['cancel', 'ses_a2', '--pending', '--by', '', '--db', db]);
  assert.is.not(bad.code, 0);
  assert.match(bad.stderr, 'Invalid actor');
});

test('cli actor - sessiond status in words: the decisions of the turn with who made them, and who cancelled it', async () => {
  const engine = await openEngine({ file: tmp.file('status.db'), runner: echoRunner({ steps: 1 }) });
  try {
    await engine.admit('ses_st', { prompt: 'hi' });
    await engine.awaitIdle('ses_st');
    const status = await engine.status('ses_st');
    const wait = {
      kind: 'approval' as const,
      name: 'call_1',
      executionId: status.execution!.id,
      since: 0,
      until: null,
      messageId: 'msg_1',
      callId: 'call_1',
      tool: 'send_mail',
      durable: false,
      idempotencyKey: null,
      outcome: 'approved' as const,
      resolvedAt: 1,
      reason: 'looks right',
      actor: 'alice',
      started: false,
    };
    const lines = describeStatus({ ...status, waits: [wait], execution: { ...status.execution!, cancelledBy: 'bob' } });
    assert.ok(lines.includes('  decided in this turn: approval call_1 approved by alice (looks right)'), lines.join('\n'));
    assert.ok(lines.includes(`  turn ${status.execution!.id} cancelled by bob`), lines.join('\n'));
  } finally {
    await engine.close();
  }
});

test.run();
