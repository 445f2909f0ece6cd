/**
 * The projector on real engine output: turns run by the embedded engine (echo runner, a tool
 * runner) on a temp file, projected from its log, and a projector following the log from another
 * connection while the engine writes.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock } from '../../src/clock.ts';
import { sequentialIds } from '../../src/ids.ts';
import { openEngine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import type { Runner } from '../../src/runner/types.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { Projector } from '../../src/projector/projector.ts';
import { projectionHash, rebuildProjection } from '../../src/projector/rebuild.ts';
import { listSessions, pendingWakes, sessionRows } from '../../src/projector/queries.ts';
import { parseMessage, type AssistantData } from '../../src/projector/message-rows.ts';
import { tempDir } from '../support/tmp.ts';
import { memoryDb } from './support.ts';

test("engine - echo turns with a compaction, projected from the engine's log into its own file", async () => {
  const tmp = tempDir();
  const engine = await openEngine({
    file: tmp.file('s.db'),
    runner: echoRunner({ steps: 2, overflowAtStep: 1 }),
    clock: new ManualClock(1_000),
    ids: sequentialIds(),
  });
  await engine.admit('ses_1', { id: 'inp_a', prompt: 'one two three four' });
  await engine.awaitIdle('ses_1');
  await engine.admit('ses_1', { id: 'inp_b', prompt: 'five six', wake: false });
  const projector = new Projector(engine.db);
  const result = projector.apply(await engine.log.readAll());
  assert.is(result.position, await engine.log.head());
  let rows = sessionRows(engine.db, 'ses_1');
  assert.equal(rows.executions, [], 'the settled execution left no live row');
  assert.equal(
    rows.inputs.map((i) => [i.id, i.admitted_seq > 0, i.promoted_seq !== null, i.wake_pending]),
    [
      ['inp_a', true, true, 0],
      ['inp_b', true, false, 0],
    ],
  );
  const messages = rows.messages.map(parseMessage);
  assert.equal(
    messages.map((m) => m.type),
    ['user', 'assistant', 'compaction', 'assistant'],
  );
  const [first, , second] = [messages[1]!, messages[2]!, messages[3]!].map((m) => m.data as AssistantData);
  assert.equal(messages[0]!.data, { prompt: 'one two three four', delivery: 'queue', executionId: first!.executionId });
  assert.equal([first!.status, first!.finish, first!.parts.map((p) => p.text)], ['completed', 'continue', ['echo: one two']]);
  assert.equal([second!.status, second!.finish, second!.parts.map((p) => p.text)], ['completed', 'stop', ['echo: three four']]);
  assert.equal(messages[2]!.data, { executionId: first!.executionId, reason: 'context overflow', status: 'completed', summary: 'summary of 18 characters' });
  assert.equal(pendingWakes(engine.db), [], 'inp_b asked for no wake');
  // wake the session: the second turn runs, and the projection follows incrementally
  await engine.wake('ses_1');
  await engine.awaitIdle('ses_1');
  projector.apply(await engine.log.readAll({ after: projector.checkpoint() }));
  rows = sessionRows(engine.db, 'ses_1');
  assert.equal(
    rows.inputs.map((i) => i.promoted_seq !== null),
    [true, true],
  );
  assert.is(rows.messages.filter((m) => m.type === 'assistant').length, 4);
  assert.equal(
    listSessions(engine.db).map((s) => [s.sessionId, s.executions, s.pendingInputs, s.messages]),
    [['ses_1', 0, 0, 8]],
  );
  // a rebuild from the same log into a fresh database gives the same rows
  const fresh = memoryDb();
  await rebuildProjection(fresh, engine.log);
  assert.is(projectionHash(fresh), projectionHash(engine.db));
  await engine.close();
  tmp.remove();
});

test('engine - tool calls that succeed and fail, projected on the assistant message', async () => {
  const tmp = tempDir();
  const runner: Runner = async (ctx) => {
    await ctx.phase('unknown');
    const { messageId } = await ctx.startStep();
    await ctx.tool(messageId, { name: 'lookup', input: { q: 'sessiond' }, durable: true, callId: 'call_ok' }, async () => ({ found: 1 }));
    await ctx
      .tool(messageId, { name: 'write', input: 'x', callId: 'call_bad' }, async () => {
        throw new RangeError('disk full');
      })
      .catch(() => undefined);
    await ctx.text(messageId, 'done', 'prt_1');
    await ctx.endStep(messageId);
  };
  const engine = await openEngine({ file: tmp.file('t.db'), runner, clock: new ManualClock(5), ids: sequentialIds() });
  await engine.admit('ses_t', { id: 'inp_t', prompt: 'use tools' });
  await engine.awaitIdle('ses_t');
  new Projector(engine.db).apply(await engine.log.readAll());
  const assistant = sessionRows(engine.db, 'ses_t')
    .messages.filter((m) => m.type === 'assistant')
    .map((m) => JSON.parse(m.data) as AssistantData);
  assert.is(assistant.length, 1);
  const [msg] = assistant;
  assert.is(msg!.status, 'completed');
  assert.equal(msg!.parts, [{ id: 'prt_1', type: 'text', text: 'done' }]);
  assert.equal(msg!.tools, [
    {
      callId: 'call_ok',
      name: 'lookup',
      input: { q: 'sessiond' },
      durable: true,
      idempotencyKey: `ses_t:${msg!.executionId}:call_ok`,
      state: 'completed',
      output: { found: 1 },
    },
    { callId: 'call_bad', name: 'write', input: 'x', durable: false, state: 'error', error: { type: 'tool', message: 'disk full', name: 'RangeError' } },
  ]);
  await engine.close();
  tmp.remove();
});

test('follow - a projector following the embedded log sees commits from another connection', async () => {
  const tmp = tempDir();
  const file = tmp.file('shared.db');
  const engine = await openEngine({ file, runner: echoRunner({ steps: 2 }), clock: new ManualClock(0), ids: sequentialIds() });
  const db = openDatabase(file); // the projector's own connection, as another process would have
  migrate(db);
  const log = new SqliteEventLog(db, { maxPollMs: 20 });
  const projector = new Projector(db);
  const errors: unknown[] = [];
  const batches: number[] = [];
  const sub = projector.follow(log, { onError: (e) => errors.push(e), onApplied: (r) => batches.push(r.applied) });
  await engine.admit('ses_1', { id: 'inp_1', prompt: 'hello there' });
  await engine.admit('ses_2', { id: 'inp_2', prompt: 'second session', wake: false });
  await engine.awaitIdle('ses_1');
  const head = await engine.log.head();
  await waitFor(() => projector.checkpoint() >= head, { what: `the follower to reach position ${head}` });
  assert.equal(errors, []);
  assert.ok(batches.length >= 1 && batches.reduce((a, b) => a + b, 0) === head, `every committed event applied once (${batches.join('+')} of ${head})`);
  assert.equal(
    sessionRows(db, 'ses_1').messages.map((m) => m.type),
    ['user', 'assistant', 'assistant'],
  );
  assert.equal(pendingWakes(db), [], 'ses_2 was admitted without a wake');
  // more commits after the follower caught up arrive too
  await engine.wake('ses_2');
  await engine.awaitIdle('ses_2');
  const head2 = await engine.log.head();
  await waitFor(() => projector.checkpoint() >= head2, { what: `the follower to reach position ${head2}` });
  assert.equal(
    sessionRows(db, 'ses_2').inputs.map((i) => i.promoted_seq !== null),
    [true],
  );
  await sub.close();
  const fresh = memoryDb();
  await rebuildProjection(fresh, log);
  assert.is(projectionHash(db), projectionHash(fresh));
  await log.close();
  db.close();
  await engine.close();
  tmp.remove();
});

test.run();
