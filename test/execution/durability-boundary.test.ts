/**
 * The runner's durability boundary: writes are appended when an external effect is about to
 * happen (a tool's journal, `phase('unknown')`, a compaction's start, `flush()`) and the rest rides
 * with the next such write or the settlement. A turn costs a few appends, not one per call, and an
 * effect never runs before what precedes it is durable.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase, type Db } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { SessionExecution } from '../../src/execution/session-execution.ts';
import { admitInput } from '../../src/input/admit.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import type { DraftEvent, SessionEvent } from '../../src/events/envelope.ts';
import type { Runner } from '../../src/runner/types.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../../src/testing/wait.ts';

type TempDir = ReturnType<typeof tempDir>;
import { spyLog } from '../support/spy-log.ts';

interface World {
  tmp: TempDir;
  db: Db;
  inner: SqliteEventLog;
  appends: string[][];
  execution: SessionExecution;
}

function world(runner: Runner): World {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('boundary.db'));
  migrate(db);
  const inner = new SqliteEventLog(db);
  const appends: string[][] = [];
  const log = spyLog(inner, {
    beforeAppend: (drafts: DraftEvent[]) => {
      appends.push(drafts.map((d) => d.type));
    },
  });
  return { tmp, db, inner, appends, execution: new SessionExecution({ log, runner }) };
}

async function turn(w: World, sessionId: string, prompt = 'one two three'): Promise<void> {
  await admitInput(w.execution.handler, sessionId, { id: 'inp_1', prompt, wake: false });
  w.appends.length = 0;
  await w.execution.resume(sessionId);
  await w.execution.awaitIdle(sessionId);
}

async function done(w: World): Promise<void> {
  await w.execution.close();
  w.db.close();
  w.tmp.remove();
}

const types = async (log: SqliteEventLog, sessionId: string) => (await log.readSession(sessionId)).map((e: SessionEvent) => e.type);

test('a step with three durable tool calls is five appends of 13 events: claim, one per tool journal (one tool.called that starts the call), settlement', async () => {
  const w = world(async (ctx) => {
    const { messageId } = await ctx.startStep();
    for (let k = 0; k < 3; k++) await ctx.tool(messageId, { name: 'lookup', input: { k }, durable: true }, async () => `result ${k}`);
    await ctx.endStep(messageId, 'stop');
  });
  await turn(w, 'ses_tools');
  assert.equal(w.appends, [
    ['execution.claimed', 'execution.started', 'input.promoted'],
    ['step.started', 'execution.phase', 'tool.called'],
    ['tool.succeeded', 'tool.called'],
    ['tool.succeeded', 'tool.called'],
    ['tool.succeeded', 'step.ended', 'execution.settled'],
  ]);
  await done(w);
});

test('ctx.tool calls of a custom runner under Promise.all run at once: one append journals all three, each result rides later', async () => {
  let running = 0;
  let most = 0;
  const w = world(async (ctx) => {
    const { messageId } = await ctx.startStep();
    const call = (k: number) =>
      ctx.tool(messageId, { name: 'lookup', input: { k }, durable: true }, async () => {
        most = Math.max(most, ++running);
        // each waits until all three have started (one at a time, this never ends)
        await waitFor(() => most === 3, { timeoutMs: 5_000, what: 'three calls running at once' });
        running--;
        return `result ${k}`;
      });
    assert.equal(await Promise.all([call(0), call(1), call(2)]), ['result 0', 'result 1', 'result 2']);
    await ctx.endStep(messageId, 'stop');
  });
  await turn(w, 'ses_parallel');
  assert.equal(w.appends, [
    ['execution.claimed', 'execution.started', 'input.promoted'],
    ['step.started', 'execution.phase', 'tool.called', 'tool.called', 'tool.called'],
    ['tool.succeeded', 'tool.succeeded', 'tool.succeeded', 'step.ended', 'execution.settled'],
  ]);
  await done(w);
});

test('an echo turn of three steps is five appends: each model request waits for what came before it', async () => {
  const w = world(echoRunner({ steps: 3 }));
  await turn(w, 'ses_echo');
  assert.equal(w.appends, [
    ['execution.claimed', 'execution.started', 'input.promoted'],
    ['step.started', 'execution.phase'],
    ['text.completed', 'step.ended', 'step.started'],
    ['text.completed', 'step.ended', 'step.started'],
    ['text.completed', 'step.ended', 'execution.settled'],
  ]);
  await done(w);
});

test('a tool runs only once its journal and every write before it are durable; its result is not durable yet', async () => {
  let seenInside: string[] = [];
  const w = world(async (ctx) => {
    const { messageId } = await ctx.startStep();
    await ctx.text(messageId, 'let me look that up');
    await ctx.tool(messageId, { name: 'lookup', input: {} }, async () => {
      seenInside = await types(w.inner, ctx.sessionId);
      return 'found';
    });
    const afterTool = await types(w.inner, ctx.sessionId);
    assert.not.ok(afterTool.includes('tool.succeeded'), 'a result that precedes no effect is buffered');
    await ctx.flush();
    assert.is((await types(w.inner, ctx.sessionId)).at(-1), 'tool.succeeded', 'flush() makes it durable');
    await ctx.endStep(messageId);
  });
  await turn(w, 'ses_inside');
  assert.equal(seenInside.slice(-4), ['step.started', 'text.completed', 'execution.phase', 'tool.called']);
  assert.is((await types(w.inner, 'ses_inside')).at(-1), 'execution.settled');
  await done(w);
});

test('a failing runner: its buffered writes are appended with the failed settlement, in call order, and its open step fails with it', async () => {
  const w = world(async (ctx) => {
    const { messageId } = await ctx.startStep();
    await ctx.text(messageId, 'partial');
    throw new Error('model quota exceeded');
  });
  await turn(w, 'ses_fail');
  // the step the runner left open fails with the turn's error, in the settlement's append
  assert.equal(w.appends.at(-1), ['step.started', 'text.completed', 'step.failed', 'execution.settled']);
  const [failed, settled] = (await w.inner.readSession('ses_fail')).slice(-2);
  assert.is((settled!.payload as { outcome: string }).outcome, 'failed');
  assert.equal((failed!.payload as { error: unknown }).error, { type: 'unknown', message: 'model quota exceeded', name: 'Error' });
  await done(w);
});

test('a cancel between buffered writes: the next durable write refuses them all, nothing after the cancel is written', async () => {
  let sawError: unknown;
  const w = world(async (ctx) => {
    const { messageId } = await ctx.startStep();
    await ctx.text(messageId, 'about to call a tool');
    await w.execution.cancel(ctx.sessionId, 'user pressed stop');
    try {
      await ctx.tool(messageId, { name: 'send_mail', input: {} }, async () => 'sent');
    } catch (err) {
      sawError = err;
      throw err;
    }
  });
  await turn(w, 'ses_cancel');
  assert.ok(sawError, 'the tool call after the cancel was refused');
  const after = await types(w.inner, 'ses_cancel');
  assert.is(after.at(-1), 'execution.cancelled');
  assert.not.ok(after.includes('tool.called'), 'the tool never ran and was never journaled');
  assert.not.ok(after.includes('text.completed'), 'the buffered text went with the refused write');
  await done(w);
});

test('steering inputs promoted by a buffered step are not offered again by the next step', async () => {
  const steered: string[][] = [];
  const w = world(async (ctx) => {
    for (let k = 0; k < 2; k++) {
      if (k === 0) await admitInput(w.execution.handler, ctx.sessionId, { id: 'inp_steer', prompt: 'also this', delivery: 'steer', wake: false });
      const { messageId, steered: s } = await ctx.startStep();
      steered.push(s.map((i) => i.inputId));
      await ctx.endStep(messageId);
    }
  });
  await turn(w, 'ses_steer');
  assert.equal(steered, [['inp_steer'], []]);
  const promoted = (await w.inner.readSession('ses_steer')).filter((e) => e.type === 'input.promoted').map((e) => (e.payload as { inputId: string }).inputId);
  assert.equal(promoted, ['inp_1', 'inp_steer'], 'each input promoted once');
  await done(w);
});

test.run();
