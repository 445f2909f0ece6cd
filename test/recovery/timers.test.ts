/**
 * Timers, signal timeouts and scheduled prompts, delivered by the recovery sweep from the log and
 * the projection (an injected clock moves time): never early, and the turn resumes holding nothing
 * meanwhile. A timer survives its worker: the next worker on the same file ends it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock } from '../../src/clock.ts';
import { sequentialIds } from '../../src/ids.ts';
import { openDatabase, type Db } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { SessionExecution } from '../../src/execution/session-execution.ts';
import { startWorker, type Worker } from '../../src/execution/worker.ts';
import { admitInput } from '../../src/input/admit.ts';
import { resolveWait } from '../../src/input/resolve.ts';
import { stateOf } from '../../src/machines/decider.ts';
import type { RecoveryNotice } from '../../src/recovery/sweeper.ts';
import type { Runner } from '../../src/runner/types.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';

const SES = 'ses_t';

function host(file: string, clock: ManualClock, runner: Runner, notices: RecoveryNotice[] = [], seed = '') {
  const db: Db = openDatabase(file);
  migrate(db);
  const execution = new SessionExecution({ log: new SqliteEventLog(db), clock, ids: sequentialIds(seed), runner, ownerId: `own_a${seed}` });
  const worker: Worker = startWorker(execution, {
    projection: db,
    clock,
    sweep: { intervalMs: 1_000_000_000, onNotice: (n) => notices.push(n) },
    onError: (err) => console.error(err),
  });
  const events = () => execution.log.readSession(SES) as Promise<SessionEvent[]>;
  const settledAs = async (outcome: string, times = 1) =>
    waitFor(async () => (await events()).filter((e) => e.type === 'execution.settled' && e.payload.outcome === outcome).length >= times, {
      what: `${times} execution.settled ${outcome}`,
    });
  const idle = () => execution.awaitIdle(SES);
  return {
    db,
    execution,
    worker,
    events,
    settledAs,
    idle,
    async stop() {
      await worker.stop();
      db.close();
    },
  };
}

test('timers - ctx.sleep ends the execution and holds nothing; the sweep resumes the turn at its time, not a millisecond before', async () => {
  const tmp = tempDir('sessiond-timers-');
  const clock = new ManualClock(1_000);
  const runs: number[] = [];
  const runner: Runner = async (ctx) => {
    runs.push(ctx.clock.now());
    const { messageId } = await ctx.startStep();
    await ctx.sleep(60_000);
    await ctx.text(messageId, 'an hour later, checked again');
    await ctx.endStep(messageId, 'stop');
  };
  const notices: RecoveryNotice[] = [];
  const h = host(tmp.file('t.db'), clock, runner, notices);
  try {
    await admitInput(h.execution.handler, SES, { prompt: 'check again in a minute' });
    await h.execution.resume(SES);
    await h.settledAs('waiting');
    await h.idle();
    const waiting = await h.execution.handler.load(SES);
    assert.is(stateOf(waiting), 'settled');
    assert.equal(
      waiting.context.waits.map((w) => [w.kind, w.name, w.until, w.outcome]),
      [['timer', 'sleep-1', 61_000, null]],
    );
    assert.is(h.db.prepare('SELECT COUNT(*) FROM session_execution').pluck().get(), 0, 'no live execution, no lease to renew');

    clock.set(60_999);
    const early = await h.worker.sweeper!.sweep();
    assert.equal(early.elapsed, [], 'never wakes a timer early');
    assert.is(runs.length, 1);

    clock.set(61_000);
    const due = await h.worker.sweeper!.sweep();
    assert.equal(due.elapsed, [SES]);
    await h.settledAs('succeeded');
    assert.equal(runs, [1_000, 61_000], 'the turn ran again once, at the timer');
    const types = (await h.events()).map((e) => e.type);
    assert.is(types.filter((t) => t === 'wait.resolved').length, 1);
    assert.is(types.filter((t) => t === 'text.completed').length, 1, 'the sleep returned at once in the resumed turn');
    assert.ok(notices.some((n) => n.type === 'wait_elapsed' && n.name === 'sleep-1' && n.resumed));
    assert.equal((await h.worker.sweeper!.sweep()).elapsed, [], 'an ended timer is not ended again');
  } finally {
    await h.stop();
    tmp.remove();
  }
});

test('timers - a timer outlives its worker: a new worker on the same file ends it when due', async () => {
  const tmp = tempDir('sessiond-timers-');
  const file = tmp.file('t.db');
  const clock = new ManualClock(0);
  let resumed = 0;
  const runner: Runner = async (ctx) => {
    await ctx.sleep(5_000);
    resumed++;
  };
  const first = host(file, clock, runner);
  await admitInput(first.execution.handler, SES, { prompt: 'later' });
  await first.execution.wake(SES);
  await first.settledAs('waiting');
  await first.idle();
  await first.stop();

  clock.set(5_000);
  const second = host(file, clock, runner, [], 'b'); // another process: its own ids
  try {
    await second.worker.sweeper!.sweep();
    await second.settledAs('succeeded');
    assert.is(resumed, 1);
  } finally {
    await second.stop();
    tmp.remove();
  }
});

test('timers - waitFor: a delivered value resumes the turn with it; past its timeout the sweep resumes it with timed_out', async () => {
  const tmp = tempDir('sessiond-timers-');
  const clock = new ManualClock(0);
  const results: unknown[] = [];
  const runner: Runner = async (ctx) => {
    // a resumed turn runs from the top: its input is the resume input, and ctx.waits says what it waited for
    const name = ctx.inputs[0]!.continues?.reason === 'resumed' ? ctx.waits[0]!.name : `reply-${ctx.inputs[0]!.prompt}`;
    const r = await ctx.waitFor<{ ok: boolean }>(name, { timeoutMs: 10_000 });
    results.push(r);
  };
  const h = host(tmp.file('t.db'), clock, runner);
  try {
    await admitInput(h.execution.handler, SES, { prompt: 'a' });
    await h.execution.resume(SES);
    await h.settledAs('waiting');
    await h.idle();
    const r = await resolveWait(h.execution.handler, SES, { kind: 'signal', name: 'reply-a', outcome: 'delivered', data: { ok: true } });
    assert.is(r.resolved, true);
    assert.match(r.resumeInputId ?? '', /^inp_resume_exe_/);
    await h.settledAs('succeeded'); // the worker saw the resume input's wake on its log subscription
    assert.equal(results, [{ outcome: 'delivered', data: { ok: true } }]);

    await admitInput(h.execution.handler, SES, { prompt: 'b' });
    await h.settledAs('waiting', 2);
    await h.idle();
    clock.set(clock.now() + 9_999);
    assert.equal((await h.worker.sweeper!.sweep()).elapsed, []);
    clock.set(clock.now() + 1);
    assert.equal((await h.worker.sweeper!.sweep()).elapsed, [SES]);
    await h.settledAs('succeeded', 2);
    assert.equal(results[1], { outcome: 'timed_out' });
    // a value that comes after the timeout is refused, naming what happened
    const late = await resolveWait(h.execution.handler, SES, { kind: 'signal', name: 'reply-b', outcome: 'delivered' }).catch((e: Error) => e);
    assert.instance(late, Error);
    assert.match((late as Error).message, /timed_out/);
  } finally {
    await h.stop();
    tmp.remove();
  }
});

test('timers - a scheduled prompt (notBefore) is not run before its time; the sweep runs it when due', async () => {
  const tmp = tempDir('sessiond-timers-');
  const clock = new ManualClock(0);
  const ran: string[] = [];
  const runner: Runner = async (ctx) => {
    ran.push(...ctx.inputs.map((i) => `${i.prompt}@${ctx.clock.now()}`));
  };
  const h = host(tmp.file('t.db'), clock, runner);
  try {
    const receipt = await admitInput(h.execution.handler, SES, { prompt: 'good morning', notBefore: 30_000 });
    await h.idle(); // the worker saw the admission's wake: nothing was due
    assert.equal(ran, []);
    const pending = (await h.execution.handler.load(SES)).context.pending;
    assert.equal(
      pending.map((p) => [p.inputId, p.notBefore]),
      [[receipt.inputId, 30_000]],
    );
    // another prompt, not scheduled, runs at once and leaves the scheduled one waiting
    await admitInput(h.execution.handler, SES, { prompt: 'now' });
    await h.settledAs('succeeded');
    await h.idle();
    assert.equal(ran, ['now@0']);
    clock.set(29_999);
    await h.worker.sweeper!.sweep();
    await h.idle();
    assert.equal(ran, ['now@0'], 'never runs a prompt before its time');
    clock.set(30_000);
    const report = await h.worker.sweeper!.sweep();
    assert.equal(report.woken, [SES]);
    await h.settledAs('succeeded', 2);
    assert.equal(ran, ['now@0', 'good morning@30000']);
    // an exact resend is the same admission; a different time is a different input
    const again = await admitInput(h.execution.handler, SES, { id: receipt.inputId, prompt: 'good morning', notBefore: 30_000 });
    assert.is(again.created, false);
    const other = await admitInput(h.execution.handler, SES, { id: receipt.inputId, prompt: 'good morning', notBefore: 40_000 }).catch((e: Error) => e);
    assert.match((other as Error).message, /different content/);
  } finally {
    await h.stop();
    tmp.remove();
  }
});

test('timers - notBefore must be a whole number of milliseconds since the epoch', async () => {
  const tmp = tempDir('sessiond-timers-');
  const h = host(tmp.file('t.db'), new ManualClock(0), async () => {});
  try {
    for (const bad of [-1, 1.5, Number.NaN, '2026-12-24' as unknown as number]) {
      const err = await admitInput(h.execution.handler, SES, { prompt: 'x', notBefore: bad }).catch((e: Error) => e);
      assert.match((err as Error).message, /notBefore must be a time in whole milliseconds since the epoch/);
    }
  } finally {
    await h.stop();
    tmp.remove();
  }
});

test.run();
