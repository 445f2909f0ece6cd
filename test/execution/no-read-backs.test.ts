/**
 * A turn's prompts travel in the session state: the runner gets them without the log being read
 * once per input (they used to be re-read by sequence, one log read per input). And a turn reads
 * the session only where the state may have moved without this worker knowing: not for a wake of
 * the admission it just appended, nor for the worker's second wake of it from the log.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { SessionExecution } from '../../src/execution/session-execution.ts';
import { admitInput } from '../../src/input/admit.ts';
import type { RunInput } from '../../src/runner/types.ts';
import { startSessiond } from '../../src/host.ts';
import { tempDir } from '../support/tmp.ts';
import { spyLog } from '../support/spy-log.ts';

test('no read-backs - the log reads of a turn do not grow with its number of inputs; the runner gets every prompt', async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('reads.db'));
  migrate(db);
  const inner = new SqliteEventLog(db);
  let reads = 0;
  const log = spyLog(inner, {
    afterRead: () => {
      reads++;
    },
  });
  const seen: (readonly RunInput[])[] = [];
  const execution = new SessionExecution({
    log,
    runner: async (ctx) => {
      seen.push(ctx.inputs);
    },
  });
  const turn = async (sessionId: string, prompts: string[]) => {
    for (const [i, prompt] of prompts.entries()) {
      await admitInput(execution.handler, sessionId, { id: `inp_${i}`, prompt, delivery: i === 0 ? 'queue' : 'steer', wake: false });
    }
    const before = reads;
    await execution.resume(sessionId);
    await execution.awaitIdle(sessionId);
    return reads - before;
  };
  const one = await turn('ses_one', ['only']);
  const five = await turn('ses_five', ['a', 'b', 'c', 'd', 'e']);
  assert.equal(
    seen[1]!.map((i) => i.prompt),
    ['a', 'b', 'c', 'd', 'e'],
    'every prompt reached the runner',
  );
  assert.is(five, one, `a turn of five inputs reads the log as often as a turn of one (${five} vs ${one})`);
  await execution.close();
  db.close();
  tmp.remove();
});

test("no read-backs - an admitted and woken one-step turn reads the session log twice: the wake's load and the step's look for steering inputs", async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('reads2.db'));
  migrate(db);
  let reads = 0;
  const log = spyLog(new SqliteEventLog(db), {
    afterRead: () => {
      reads++;
    },
  });
  const execution = new SessionExecution({
    log,
    runner: async (ctx) => {
      const { messageId } = await ctx.startStep();
      await ctx.tool(messageId, { name: 'lookup', input: {}, durable: true }, async () => 'found');
      await ctx.endStep(messageId);
    },
  });
  const admitAndRun = async (id: string) => {
    await admitInput(execution.handler, 'ses_reads', { id, prompt: 'look it up', wake: false });
    await execution.resume('ses_reads');
    await execution.awaitIdle('ses_reads');
  };
  await admitAndRun('inp_warm'); // the first load of a session folds its log
  const before = reads;
  await admitAndRun('inp_1');
  assert.is(reads - before, 2, 'admission and claim decide on the cached snapshot; after its own settlement the loop needs no reload');
  await execution.close();
  db.close();
  tmp.remove();
});

test('no read-backs - the whole worker: an admission wakes its turn twice (the admit, the log subscription) and the turn reads the log once', async () => {
  const tmp = tempDir();
  let reads = 0;
  const ran: string[] = [];
  const host = await startSessiond({
    db: tmp.file('worker.db'),
    report: { out: () => undefined, err: () => undefined },
    sweepMs: 3_600_000,
    decorateLog: (log) =>
      spyLog(log, {
        afterRead: () => {
          reads++;
        },
      }),
    runner: async (ctx) => {
      ran.push(...ctx.inputs.map((i) => i.inputId));
      const { messageId } = await ctx.startStep();
      await ctx.tool(messageId, { name: 'lookup', input: {}, durable: true }, async () => 'found');
      await ctx.endStep(messageId);
    },
  });
  try {
    const turn = async (id: string) => {
      await host.engine.admit('ses_worker', { id, prompt: 'look it up' });
      await host.engine.awaitIdle('ses_worker');
    };
    await turn('inp_warm'); // the first load of a session folds its log
    const before = reads;
    for (const id of ['inp_1', 'inp_2', 'inp_3']) await turn(id);
    assert.equal(ran, ['inp_warm', 'inp_1', 'inp_2', 'inp_3'], 'every admission ran, in its own turn');
    assert.is(reads - before, 3, "one read a turn (the step's look for steering inputs): neither wake reloads the admission it is for");
  } finally {
    await host.close();
    tmp.remove();
  }
});

test.run();
