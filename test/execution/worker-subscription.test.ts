/**
 * A whole worker reads the log through one subscription: the projector folds each batch, then the
 * worker wakes, aborts and observes from it (two consumers of the same events cost a second
 * delivery of every batch, on NATS a second ordered consumer). What rides on it still works for
 * another process's commits: an admission wakes its turn with the projection already holding the
 * input, a cancellation aborts the running turn, and the turns handed back on stop are projected.
 * A projection still catching up on a long log does not hold the wakes back.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startSessiond } from '../../src/host.ts';
import { logSessions } from '../../src/sessions/log-sessions.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import type { SubscribeOptions } from '../../src/events/event-log.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';
import { spyLog } from '../support/spy-log.ts';
import { DEFAULT_PROJECTOR_NAME } from '../../src/projector/projector.ts';
import { storedEvents } from '../../src/storage/sqlite/event-rows.ts';

test("worker subscription - one log subscription; another process's admission wakes a turn that finds its input projected, its cancel aborts it", async () => {
  const tmp = tempDir();
  const file = tmp.file('one.db');
  const subscribed: number[] = [];
  const projectedAtStart: unknown[] = [];
  let aborted: unknown;
  const host = await startSessiond({
    db: file,
    report: { out: () => undefined, err: () => undefined },
    sweepMs: 3_600_000,
    // the inspector's index, which a worker keeps by default, reads the log on its own in idle time (test/inspector/held-follow.test.ts)
    keepInspectorIndex: false,
    decorateLog: (log) => spyLog(log, { subscribed: (after) => subscribed.push(after) }),
    runner: async (ctx) => {
      const db = openDatabase(file, { readonly: true });
      try {
        projectedAtStart.push(db.prepare('SELECT id FROM session_input WHERE session_id = ?').pluck().all(ctx.sessionId));
      } finally {
        db.close();
      }
      if (ctx.inputs.some((i) => i.prompt === 'wait for a cancel')) {
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        aborted = ctx.signal.reason;
      }
    },
  });
  // another process on the same file (as `sessiond prompt --db` is): its commits reach the worker only through the log
  const otherDb = openDatabase(file);
  const other = logSessions(new SqliteEventLog(otherDb), {
    onClose: async () => {
      otherDb.close();
    },
  });
  try {
    await waitFor(async () => subscribed.length > 0, { timeoutMs: 5_000, what: 'the worker to subscribe' });
    await other.admit('ses_foreign', { id: 'inp_foreign', prompt: 'hello' });
    await waitFor(async () => (await other.status('ses_foreign')).outcome === 'succeeded', { timeoutMs: 10_000, what: 'the foreign admission to run' });
    assert.equal(projectedAtStart[0], ['inp_foreign'], 'the turn woke after the projection held its input');

    await other.admit('ses_stop', { id: 'inp_stop', prompt: 'wait for a cancel' });
    await waitFor(async () => projectedAtStart.length === 2, { timeoutMs: 10_000, what: 'the second turn to start' });
    await other.cancel('ses_stop', 'changed my mind');
    await waitFor(async () => aborted !== undefined, { timeoutMs: 10_000, what: 'the running turn to be aborted' });
    assert.match(String((aborted as Error).message ?? aborted), 'changed my mind');
    assert.is(subscribed.length, 1, `the worker subscribed to the log ${subscribed.length} times`);
  } finally {
    await other.close();
    await host.close();
    tmp.remove();
  }
});

test('worker subscription - a turn handed back on stop is in the projection the worker leaves', async () => {
  const tmp = tempDir();
  const file = tmp.file('stop.db');
  let started = false;
  const host = await startSessiond({
    db: file,
    report: { out: () => undefined, err: () => undefined },
    sweepMs: 3_600_000,
    runner: async (ctx) => {
      started = true;
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
    },
  });
  const head = () => {
    const db = openDatabase(file, { readonly: true });
    try {
      return {
        events: storedEvents(db).head(),
        projected: db.prepare('SELECT position FROM projector_checkpoint WHERE name = ?').pluck().get(DEFAULT_PROJECTOR_NAME) as number,
      };
    } finally {
      db.close();
    }
  };
  let running: { events: number; projected: number };
  try {
    await host.engine.admit('ses_long', { id: 'inp_long', prompt: 'take your time' });
    await waitFor(async () => started, { timeoutMs: 10_000, what: 'the turn to start' });
    running = head();
  } finally {
    await host.close();
  }
  const stopped = head();
  assert.ok(stopped.events > running.events, 'stopping appended the hand-back');
  assert.is(stopped.projected, stopped.events, 'the projection holds every event, the hand-back included');
  tmp.remove();
});

test('worker subscription - a worker whose projection is catching up on a long log still wakes a new admission at once', async () => {
  const tmp = tempDir();
  const file = tmp.file('behind.db');
  // a log the projection has never read (as `sessiond prompt --db` leaves it before any worker ran)
  const earlierDb = openDatabase(file);
  migrate(earlierDb);
  const earlier = logSessions(new SqliteEventLog(earlierDb));
  for (let i = 0; i < 5; i++) await earlier.admit(`ses_old_${i}`, { id: `inp_old_${i}`, prompt: 'from before', wake: false });
  await earlier.close();
  earlierDb.close();
  // the projector's catch-up (the subscription from position 0) is held until the test lets it go
  let release: () => void = () => undefined;
  const held = new Promise<void>((r) => {
    release = r;
  });
  const ran: string[] = [];
  const host = await startSessiond({
    db: file,
    report: { out: () => undefined, err: () => undefined },
    sweepMs: 3_600_000,
    decorateLog: (log) =>
      new Proxy(log, {
        get(target, prop, receiver) {
          if (prop !== 'subscribe') return Reflect.get(target, prop, receiver);
          return (options: SubscribeOptions) =>
            target.subscribe(
              (options.after ?? 0) > 0
                ? options
                : {
                    ...options,
                    onBatch: async (events) => {
                      await held;
                      await options.onBatch(events);
                    },
                  },
            );
        },
      }),
    runner: async (ctx) => {
      ran.push(ctx.sessionId);
    },
  });
  const otherDb = openDatabase(file);
  const other = logSessions(new SqliteEventLog(otherDb));
  try {
    await other.admit('ses_new', { id: 'inp_new', prompt: 'now' });
    await waitFor(async () => ran.includes('ses_new'), { timeoutMs: 10_000, what: 'the new admission to run while the projection catches up' });
    assert.not.ok(
      ran.some((s) => s.startsWith('ses_old')),
      'the old, unwoken admissions were not run',
    );
  } finally {
    release();
    await other.close();
    otherDb.close();
    await host.close();
    tmp.remove();
  }
});

test.run();
