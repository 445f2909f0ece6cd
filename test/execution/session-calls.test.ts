/**
 * `ctx.callSession`: a turn that calls other sessions admits into each once, waits holding nothing,
 * and resumes with their answers as soon as the worker sees their turns end (the sweep when a
 * delivery failed); a timeout ends the wait; a
 * call into itself or into a cycle is refused naming the chain; a parent that dies after admitting
 * admits nothing twice when its turn is recovered.
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
import { deleteSession } from '../../src/sessions/delete.ts';
import { sqliteEraser } from '../../src/sessions/sqlite-eraser.ts';
import { stateOf } from '../../src/machines/decider.ts';
import type { EventLog } from '../../src/events/event-log.ts';
import type { RecoveryNotice, SweepReport } from '../../src/recovery/sweeper.ts';
import type { Runner } from '../../src/runner/types.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { spyLog } from '../support/spy-log.ts';
import { tempDir } from '../support/tmp.ts';

function host(file: string, clock: ManualClock, runner: Runner, seed = '', wrap: (log: EventLog) => EventLog = (l) => l) {
  const db: Db = openDatabase(file);
  migrate(db);
  const notices: RecoveryNotice[] = [];
  const execution = new SessionExecution({
    log: wrap(new SqliteEventLog(db)),
    clock,
    ids: sequentialIds(seed),
    runner,
    ownerId: `own_a${seed}`,
    leaseMs: 30_000,
  });
  const worker: Worker = startWorker(execution, {
    projection: db,
    clock,
    sweep: { intervalMs: 1_000_000_000, onNotice: (n) => notices.push(n) },
    onError: (err) => console.error(err),
  });
  const events = (id: string) => execution.log.readSession(id) as Promise<SessionEvent[]>;
  const count = async (id: string, type: string, outcome?: string) =>
    (await events(id)).filter((e) => e.type === type && (outcome === undefined || (e.payload as { outcome?: string }).outcome === outcome)).length;
  const settledAs = (id: string, outcome: string, times = 1) =>
    waitFor(async () => (await count(id, 'execution.settled', outcome)) >= times, { what: `${id}: ${times} execution.settled ${outcome}` });
  /** Waits (never sweeping) until the worker gave `id` a child's end that resumed its turn: a child's turn that ends answers its caller at once. */
  const delivered = (id: string) =>
    waitFor(() => notices.some((n) => n.type === 'child_delivered' && n.sessionId === id && n.resumed), {
      what: `a child's end delivered to ${id} (no sweep)`,
    });
  /** Sweeps until a pass delivered a child's end to `id` (the projection may lag the log). */
  const sweepDelivers = (id: string) =>
    waitFor(async () => ((await worker.sweeper!.sweep()) as SweepReport).delivered.includes(id), { what: `a sweep delivering to ${id}` });
  const answer = async (id: string) => (await events(id)).flatMap((e) => (e.type === 'text.completed' ? [e.payload.text] : [])).at(-1);
  return {
    db,
    execution,
    worker,
    notices,
    events,
    count,
    settledAs,
    delivered,
    sweepDelivers,
    answer,
    async stop() {
      await worker.stop();
      db.close();
    },
  };
}

/** The children answer their prompt; `ses_parent` calls two of them at once and answers with both. */
const fanOut: Runner = async (ctx) => {
  if (ctx.sessionId === 'ses_parent') {
    const [a, b] = await Promise.all([
      ctx.callSession('research', { sessionId: 'ses_researcher', prompt: 'find the facts' }),
      ctx.callSession('review', { sessionId: 'ses_reviewer', prompt: 'check the facts' }),
    ]);
    const { messageId } = await ctx.startStep();
    await ctx.text(messageId, `research ${a.outcome}: ${a.text} | review ${b.outcome}: ${b.text}`);
    await ctx.endStep(messageId, 'stop');
    return;
  }
  const { messageId } = await ctx.startStep();
  await ctx.text(messageId, `${ctx.sessionId} did "${ctx.inputs[0]!.prompt}"`);
  await ctx.endStep(messageId, 'stop');
};

test('session calls - two children at once: one wait holding nothing, each child runs once, the parent answers with both', async () => {
  const tmp = tempDir('sessiond-calls-');
  const clock = new ManualClock(1_000);
  // the children answer once the waiting parent has been looked at
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const h = host(tmp.file('c.db'), clock, async (ctx) => {
    if (ctx.sessionId !== 'ses_parent') await gate;
    return fanOut(ctx);
  });
  try {
    await admitInput(h.execution.handler, 'ses_parent', { prompt: 'research and review' });
    await h.execution.resume('ses_parent');
    await h.settledAs('ses_parent', 'waiting');
    const waiting = await h.execution.handler.load('ses_parent');
    assert.is(stateOf(waiting), 'settled');
    assert.equal(
      waiting.context.waits.map((w) => [w.kind, w.name, w.child?.sessionId, w.outcome]),
      [
        ['session', 'research', 'ses_researcher', null],
        ['session', 'review', 'ses_reviewer', null],
      ],
      'Promise.all of two calls is one execution that waits for both',
    );
    assert.is(await h.count('ses_parent', 'execution.settled'), 1);
    await h.execution.awaitIdle('ses_parent');
    assert.is(h.db.prepare("SELECT COUNT(*) FROM session_execution WHERE session_id = 'ses_parent'").pluck().get(), 0, 'the waiting parent holds no lease');
    release();
    await h.settledAs('ses_researcher', 'succeeded');
    await h.settledAs('ses_reviewer', 'succeeded');

    await h.delivered('ses_parent');
    await h.settledAs('ses_parent', 'succeeded');
    assert.is(await h.answer('ses_parent'), 'research succeeded: ses_researcher did "find the facts" | review succeeded: ses_reviewer did "check the facts"');
    for (const child of ['ses_researcher', 'ses_reviewer']) {
      assert.is(await h.count(child, 'input.admitted'), 1, `${child} admitted once`);
      assert.is(await h.count(child, 'execution.claimed'), 1, `${child} ran once`);
    }
    const resolved = (await h.events('ses_parent')).filter((e) => e.type === 'wait.resolved');
    assert.equal(
      resolved.map((e) => [e.payload.name, e.payload.outcome, e.payload.actor]),
      [
        ['research', 'delivered', 'session:ses_researcher'],
        ['review', 'delivered', 'session:ses_reviewer'],
      ],
    );
    assert.ok(h.notices.some((n) => n.type === 'child_delivered' && n.child === 'ses_reviewer' && n.resumed));
    assert.equal((await h.worker.sweeper!.sweep()).delivered, [], 'a delivered end is not delivered again');
  } finally {
    await h.stop();
    tmp.remove();
  }
});

test("session calls - a child's end its worker died before delivering is delivered by another worker's sweep", async () => {
  const tmp = tempDir('sessiond-calls-');
  const file = tmp.file('c.db');
  const clock = new ManualClock(1_000);
  let ended = 0;
  // the first worker dies once both children's turns have ended: its at-once delivery to the parent never lands
  const dying = (log: EventLog): EventLog =>
    spyLog(log, {
      beforeAppend: () => {
        if (ended >= 2) throw new Error('the worker is gone');
      },
      afterAppend: (drafts, sessionId) => {
        if (sessionId !== 'ses_parent' && drafts.some((d) => d.type === 'execution.settled')) ended++;
      },
    });
  const first = host(file, clock, fanOut, '', dying);
  try {
    await admitInput(first.execution.handler, 'ses_parent', { prompt: 'research and review' });
    await first.execution.resume('ses_parent');
    await first.settledAs('ses_researcher', 'succeeded');
    await first.settledAs('ses_reviewer', 'succeeded');
    await waitFor(() => first.notices.some((n) => n.type === 'error' && n.sessionId === 'ses_parent'), { what: "the dead worker's delivery failing" });
  } finally {
    await first.stop();
  }
  const second = host(file, clock, fanOut, 'b');
  try {
    assert.is(await second.count('ses_parent', 'wait.resolved'), 0, 'nothing delivered by the dead worker');
    await second.sweepDelivers('ses_parent');
    await second.settledAs('ses_parent', 'succeeded');
    assert.is(await second.count('ses_parent', 'wait.resolved'), 2);
  } finally {
    await second.stop();
    tmp.remove();
  }
});

test('session calls - timeoutMs ends the wait timed_out when the child has not answered', async () => {
  const tmp = tempDir('sessiond-calls-');
  const clock = new ManualClock(0);
  const runner: Runner = async (ctx) => {
    const { messageId } = await ctx.startStep();
    if (ctx.sessionId === 'ses_slow') {
      await ctx.waitFor('never'); // the child waits for a signal no one sends
      return;
    }
    const r = await ctx.callSession('slow', { sessionId: 'ses_slow', prompt: 'take your time', timeoutMs: 10_000 });
    await ctx.text(messageId, `${r.outcome} ${r.sessionId} ${r.text === '' ? '(no answer)' : r.text}`);
    await ctx.endStep(messageId, 'stop');
  };
  const h = host(tmp.file('c.db'), clock, runner);
  try {
    await admitInput(h.execution.handler, 'ses_p', { prompt: 'ask the slow one' });
    await h.execution.resume('ses_p');
    await h.settledAs('ses_p', 'waiting');
    await h.settledAs('ses_slow', 'waiting');
    clock.set(9_999);
    assert.equal((await h.worker.sweeper!.sweep()).elapsed, [], 'not before its time');
    clock.set(10_000);
    await waitFor(async () => (await h.worker.sweeper!.sweep()).elapsed.includes('ses_p'), { what: 'the call timing out' });
    await h.settledAs('ses_p', 'succeeded');
    assert.is(await h.answer('ses_p'), 'timed_out ses_slow (no answer)');
  } finally {
    await h.stop();
    tmp.remove();
  }
});

test('session calls - a call into itself is refused; a cycle is refused when it would form, naming the chain', async () => {
  const tmp = tempDir('sessiond-calls-');
  const clock = new ManualClock(0);
  const runner: Runner = async (ctx) => {
    const target = ({ ses_self: 'ses_self', ses_x: 'ses_y', ses_y: 'ses_x' } as Record<string, string>)[ctx.sessionId]!;
    const r = await ctx.callSession('ask', { sessionId: target, prompt: 'ask back' });
    const { messageId } = await ctx.startStep();
    await ctx.text(messageId, `${r.outcome}: ${r.error ?? r.text}`);
    await ctx.endStep(messageId, 'stop');
  };
  const h = host(tmp.file('c.db'), clock, runner);
  try {
    await admitInput(h.execution.handler, 'ses_self', { prompt: 'call yourself' });
    await h.execution.resume('ses_self');
    await h.settledAs('ses_self', 'failed');
    const failed = (await h.events('ses_self')).find((e) => e.type === 'execution.settled')!;
    assert.match(JSON.stringify(failed.payload), /session ses_self cannot call itself/);
    assert.is(await h.count('ses_self', 'input.admitted'), 1, 'nothing admitted by the refused call');

    // ses_x calls ses_y, whose turn calls ses_x back: refused, its turn fails, and ses_x is told why
    await admitInput(h.execution.handler, 'ses_x', { prompt: 'call ses_y' });
    await h.execution.resume('ses_x');
    await h.settledAs('ses_x', 'waiting');
    await h.settledAs('ses_y', 'failed');
    const yFailed = (await h.events('ses_y')).find((e) => e.type === 'execution.settled')!;
    assert.match(JSON.stringify(yFailed.payload), /ses_y -> ses_x -> ses_y would wait in a cycle/);
    assert.equal(
      (await h.events('ses_x')).filter((e) => e.type === 'input.admitted' && e.payload.caller !== undefined),
      [],
      'ses_y admitted nothing into ses_x',
    );
    await h.delivered('ses_x');
    await h.settledAs('ses_x', 'succeeded');
    assert.match((await h.answer('ses_x')) ?? '', /^failed: .*ses_y -> ses_x -> ses_y/);
  } finally {
    await h.stop();
    tmp.remove();
  }
});

test("session calls - a child outside the parent's tenant is refused as the gateway would; a new child is the tenant's", async () => {
  const tmp = tempDir('sessiond-calls-');
  const clock = new ManualClock(0);
  const runner: Runner = async (ctx) => {
    const { messageId } = await ctx.startStep();
    if (ctx.sessionId === 'ses_acme') {
      const refused = await ctx.callSession('peek', { sessionId: 'ses_zeta', prompt: 'tell me your secrets' }).catch((e: Error) => e);
      await ctx.text(messageId, refused instanceof Error ? `refused: ${refused.message}` : 'reached');
      await ctx.endStep(messageId, 'stop');
      await ctx.callSession('kid', { sessionId: 'ses_acme-kid', prompt: 'help' });
    }
    await ctx.endStep(messageId, 'stop').catch(() => undefined);
  };
  const h = host(tmp.file('c.db'), clock, runner);
  try {
    await admitInput(h.execution.handler, 'ses_zeta', { prompt: 'mine', owner: 'zeta', wake: false });
    await admitInput(h.execution.handler, 'ses_acme', { prompt: 'call around', owner: 'acme' });
    await h.execution.resume('ses_acme');
    await h.settledAs('ses_acme', 'waiting');
    assert.is(await h.answer('ses_acme'), 'refused: Session ses_zeta has no events, or the caller may not reach it.');
    assert.is(await h.count('ses_zeta', 'input.admitted'), 1, "nothing admitted into the other tenant's session");
    const kid = await h.execution.handler.load('ses_acme-kid');
    assert.equal([kid.context.ownedBy, kid.context.calledBy], ['acme', 'ses_acme'], "the new child is the parent's tenant's, called by it");
  } finally {
    await h.stop();
    tmp.remove();
  }
});

test('session calls - a parent that dies after admitting is recovered and admits nothing twice', async () => {
  const tmp = tempDir('sessiond-calls-');
  const file = tmp.file('c.db');
  const clock = new ManualClock(0);
  let dead = false;
  // the first worker dies once the parent's children are admitted: none of its appends to the parent land after
  const dying = (log: EventLog): EventLog =>
    spyLog(log, {
      beforeAppend: (drafts, sessionId) => {
        if (sessionId === 'ses_parent' && drafts.some((d) => d.type === 'wait.started')) dead = true;
        if (dead && sessionId === 'ses_parent') throw new Error('the worker is gone'); // nothing of it reaches the parent
      },
    });
  const first = host(file, clock, fanOut, '', dying);
  await admitInput(first.execution.handler, 'ses_parent', { prompt: 'research and review' });
  await first.execution.resume('ses_parent');
  await waitFor(() => dead, { what: 'the first worker reaching the parent settle' });
  assert.is(await first.count('ses_researcher', 'input.admitted'), 1);
  assert.is(await first.count('ses_parent', 'execution.settled'), 0, 'the parent never settled');
  await first.execution.awaitIdle('ses_parent');
  await first.worker.stop();
  assert.is(await first.count('ses_parent', 'execution.settled'), 0, 'the parent never settled');

  clock.set(31_000); // the first worker's lease has expired
  const second = host(file, clock, fanOut, 'b');
  try {
    await waitFor(async () => (await second.worker.sweeper!.sweep()).recovered.includes('ses_parent'), { what: 'the parent recovered' });
    await second.settledAs('ses_parent', 'waiting');
    await second.execution.wake('ses_researcher');
    await second.execution.wake('ses_reviewer');
    await second.settledAs('ses_researcher', 'succeeded');
    await second.settledAs('ses_reviewer', 'succeeded');
    // (the children ran on the first worker, whose delivery could not land, or on the second, which delivers at once)
    await waitFor(
      async () =>
        second.notices.some((n) => n.type === 'child_delivered' && n.sessionId === 'ses_parent' && n.resumed) ||
        (await second.worker.sweeper!.sweep()).delivered.includes('ses_parent'),
      { what: "the children's ends delivered to ses_parent" },
    );
    await second.settledAs('ses_parent', 'succeeded');
    // (a child's turn running on the first worker when it stopped is handed back: its own handback
    // input runs it again, which is not the parent admitting twice)
    for (const child of ['ses_researcher', 'ses_reviewer']) {
      const events = await second.events(child);
      const calls = events.flatMap((e) => (e.type === 'input.admitted' && e.payload.inputId.startsWith('inp_call_') ? [e.payload.inputId] : []));
      assert.is(calls.length, 1, `${child}: the recovered turn admitted the same input, not a second`);
      const promoted = events.filter((e) => e.type === 'input.promoted' && e.payload.inputId === calls[0]);
      assert.is(promoted.length, 1, `${child}: the call's prompt was taken by one turn`);
    }
    assert.match((await second.answer('ses_parent')) ?? '', /^research succeeded: .* \| review succeeded: /);
  } finally {
    await second.stop();
    first.db.close();
    tmp.remove();
  }
});

/** ses_parent calls a child that waits for a signal and one that works until it is stopped; a third call is never run (its child is busy). */
const cascade: Runner = async (ctx) => {
  if (ctx.sessionId === 'ses_parent') {
    await Promise.all([
      ctx.callSession('waits', { sessionId: 'ses_waits', prompt: 'wait for a person' }),
      ctx.callSession('works', { sessionId: 'ses_works', prompt: 'work until stopped' }),
    ]);
    return;
  }
  const { messageId } = await ctx.startStep();
  if (ctx.sessionId === 'ses_waits') await ctx.waitFor('person');
  await new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)));
  await ctx.endStep(messageId, 'stop');
};

async function parentWaitingOnBusyChildren(h: ReturnType<typeof host>) {
  await admitInput(h.execution.handler, 'ses_parent', { prompt: 'delegate' });
  await h.execution.resume('ses_parent');
  await h.settledAs('ses_parent', 'waiting');
  await h.settledAs('ses_waits', 'waiting');
  await waitFor(async () => (await h.count('ses_works', 'execution.started')) === 1, { what: 'ses_works running' });
}

test('session calls - cancelling the parent cancels the turns it waits for, with the reason', async () => {
  const tmp = tempDir('sessiond-calls-');
  const h = host(tmp.file('c.db'), new ManualClock(0), cascade);
  try {
    await parentWaitingOnBusyChildren(h);
    const result = await h.execution.cancel('ses_parent', 'the user gave up', undefined, { actor: 'alice' });
    assert.ok(result.cancelled);
    const why = 'its caller ses_parent was cancelled: the user gave up';
    const works = (await h.events('ses_works')).find((e) => e.type === 'execution.cancelled');
    assert.is(works?.payload.reason, why, 'the running child is cancelled with the reason');
    assert.is(works?.payload.actor, 'alice');
    const waits = (await h.events('ses_waits')).filter((e) => e.type === 'wait.resolved');
    assert.equal(
      waits.map((e) => [e.payload.name, e.payload.outcome, e.payload.reason]),
      [['person', 'cancelled', `cancelled: ${why}`]],
      "the waiting child's turn ends cancelled",
    );
    await h.execution.awaitIdle('ses_works'); // its runner was stopped (it never ends by itself)
    const sweep = await h.worker.sweeper!.sweep();
    assert.equal(sweep.delivered, [], 'nothing is delivered to a cancelled parent');
  } finally {
    await h.stop();
    tmp.remove();
  }
});

test('session calls - deleting a waiting parent cancels its children first (their logs stay)', async () => {
  const tmp = tempDir('sessiond-calls-');
  const clock = new ManualClock(0);
  const h = host(tmp.file('c.db'), clock, cascade);
  try {
    await parentWaitingOnBusyChildren(h);
    await deleteSession(h.execution.handler, sqliteEraser(h.db, clock), 'ses_parent', { reason: 'cleanup' });
    assert.is((await h.events('ses_parent')).length, 0);
    const works = (await h.events('ses_works')).find((e) => e.type === 'execution.cancelled');
    assert.is(works?.payload.reason, 'its caller ses_parent was cancelled: the session is being deleted: cleanup');
    assert.is(await h.count('ses_waits', 'wait.resolved', 'cancelled'), 1);
    assert.ok((await h.events('ses_waits')).length > 0, 'a child is a session of its own: it is not deleted');
  } finally {
    await h.stop();
    tmp.remove();
  }
});

test.run();
