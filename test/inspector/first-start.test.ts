/**
 * A first start over a log no inspector has indexed (an upgrade, or a worker run without
 * `--inspect`): a view of a long session far past what the follow has reached waits for the follow
 * to get there, and the follow runs meanwhile; the view then reads only a checkpoint's stretch of
 * the log, not the session up to its sequence. Reads are counted through the log (spyLog).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEngine, type Engine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { startInspector, type Inspector } from '../../src/inspector/server.ts';
import { SqliteInspectorIndex } from '../../src/inspector/sqlite-index.ts';
import { CHECKPOINT_EVERY } from '../../src/inspector/store.ts';
import type { EventLog } from '../../src/events/event-log.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { spyLog } from '../support/spy-log.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
const LONG = 'ses_first_long';
/** Longer than a view folds on its own during a first start (5 checkpoints). */
const EVENTS = 8 * CHECKPOINT_EVERY;
let engine: Engine;

test.before(async () => {
  engine = await openEngine({ file: tmp.file('first.db'), runner: echoRunner({ steps: 1 }) });
  for (let turn = 0; (await engine.log.lastSeq(LONG)) < EVENTS; turn++) {
    await engine.admit(LONG, { prompt: `turn number ${turn}` });
    await engine.awaitIdle(LONG);
  }
});

test.after(async () => {
  await engine?.close();
  tmp.remove();
});

/** The engine's log with the inspector's follow held until a view reads LONG; `read` counts what readSession returns. */
function heldLog(onBatch?: () => void) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const counted = { read: 0 };
  const spied = spyLog(engine.log, { afterRead: (events) => (counted.read += events.length) });
  const log = new Proxy(spied, {
    get(target, prop) {
      if (prop === 'subscribe')
        return (options: Parameters<EventLog['subscribe']>[0]) =>
          target.subscribe({
            ...options,
            onBatch: async (events) => {
              await released;
              onBatch?.();
              return options.onBatch(events);
            },
          });
      if (prop === 'lastSeq' || prop === 'readSession')
        return (sessionId: string, ...rest: unknown[]) => {
          if (sessionId === LONG) release();
          return (target[prop] as (id: string, ...a: unknown[]) => unknown)(sessionId, ...rest);
        };
      return Reflect.get(target, prop);
    },
  });
  return { log, counted };
}

async function fresh(name: string) {
  const db = openDatabase(tmp.file(name));
  migrate(db);
  return db;
}

async function body(inspector: Inspector, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(new URL(path, inspector.url));
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

test('first start - a view far past the follow waits for it and reads a checkpoint stretch, not the session', async () => {
  const lastSeq = await engine.log.lastSeq(LONG);
  const seq = lastSeq - 100;
  // what an inspector that followed the whole log answers
  const whole = await startInspector({ log: engine.log, port: 0 });
  const expected = await body(whole, `/api/sessions/${LONG}/at/${seq}`);
  await whole.close();
  assert.is(expected.status, 200);

  const db = await fresh('index-a.db');
  const { log, counted } = heldLog();
  const inspector = await startInspector({ log, port: 0, index: new SqliteInspectorIndex(db) });
  try {
    const got = await body(inspector, `/api/sessions/${LONG}/at/${seq}`);
    assert.is(got.status, 200, JSON.stringify(got.body));
    assert.equal(got.body, expected.body, 'the same view as after a whole follow');
    assert.ok(inspector.store.getSnapshot().context.position >= (await engine.log.head()) - 1_000, 'the follow ran while the view waited');
    assert.ok(counted.read <= 3 * CHECKPOINT_EVERY, `the view read ${counted.read} events itself (its session has ${lastSeq})`);
  } finally {
    await inspector.close();
    db.close();
  }
});

test('first start - a view waiting for the follow gets a 503 naming the log when the follow stops', async () => {
  const db = await fresh('index-b.db');
  const { log } = heldLog(() => {
    throw new Error('the disk went away');
  });
  const errors: string[] = [];
  const inspector = await startInspector({ log, port: 0, index: new SqliteInspectorIndex(db), onError: (err) => errors.push(String(err)) });
  try {
    const got = await body(inspector, `/api/sessions/${LONG}/conversation`);
    assert.is(got.status, 503);
    assert.match(JSON.stringify(got.body), /stopped following .*the disk went away/);
  } finally {
    await inspector.close();
    db.close();
  }
});

test.run();
