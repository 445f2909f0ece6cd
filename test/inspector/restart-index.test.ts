/**
 * A restarted inspector starts every view from the index its previous run kept beside the log
 * (SqliteInspectorIndex), not from seq 0: before it has followed the log at all, the session view,
 * time travel to the middle and to the end, the chart at a seq and the conversation at the head each
 * read a bounded number of events (counted through the log), and answer as the first run did.
 * What makes the inspector hold at a million events (bench: inspector --full).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEngine, type Engine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import type { EventLog, Subscription } from '../../src/events/event-log.ts';
import { hydrate } from '../../src/machines/decider.ts';
import { startInspector, type Inspector } from '../../src/inspector/server.ts';
import { SqliteInspectorIndex } from '../../src/inspector/sqlite-index.ts';
import { CHECKPOINT_EVERY } from '../../src/inspector/store.ts';
import type { AtView, SessionView } from '../../src/inspector/views.ts';
import type { ConversationView } from '../../src/inspector/conversation-at.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
const SESSION = 'ses_restart';
/** Events a view may read from the log after a restart: the way from a checkpoint or a mark, never the session. */
const MAX_READ = 1_500;
let engine: Engine;
let last: number;

test.before(async () => {
  engine = await openEngine({ file: tmp.file('restart.db'), runner: echoRunner({ steps: 1 }) });
  for (let turn = 0; (await engine.log.lastSeq(SESSION)) < 4 * CHECKPOINT_EVERY + 300; turn++) {
    await engine.admit(SESSION, { prompt: `turn number ${turn} of the long session` });
    await engine.awaitIdle(SESSION);
  }
  last = await engine.log.lastSeq(SESSION);
});

test.after(async () => {
  await engine?.close();
  tmp.remove();
});

/** The log whose subscription has not delivered anything yet (a restart on a long log), counting the events read. */
function heldLog(log: EventLog): { log: EventLog; read: { events: number } } {
  const read = { events: 0 };
  const wrapped = Object.create(log) as EventLog;
  wrapped.readSession = async (sessionId, options) => {
    const events = await log.readSession(sessionId, options);
    read.events += events.length;
    return events;
  };
  wrapped.subscribe = (): Subscription => ({ position: 0, close: async () => undefined });
  return { log: wrapped, read };
}

async function get<T>(inspector: Inspector, path: string): Promise<T> {
  const res = await fetch(new URL(path, inspector.url));
  const body = res.headers.get('content-type')?.startsWith('application/json') ? await res.json() : await res.text();
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`);
  return body as T;
}

test('restart index - every view of a restarted inspector reads a bounded stretch of the log, and answers as before', async () => {
  const middle = Math.floor(last / 2) + 7;
  const paths = {
    session: `/api/sessions/${SESSION}`,
    middle: `/api/sessions/${SESSION}/at/${middle}`,
    end: `/api/sessions/${SESSION}/at/${last}`,
    chart: `/api/chart.svg?session=${SESSION}&seq=${middle}`,
    conversation: `/api/sessions/${SESSION}/conversation`,
  };
  // the first run follows the whole log, keeping its index beside it
  const first = await startInspector({ log: engine.log, port: 0, index: new SqliteInspectorIndex(engine.db) });
  const before: Record<string, unknown> = {};
  try {
    const head = await engine.log.head();
    await waitFor(() => first.store.getSnapshot().context.position >= head, { what: 'the first inspector to follow the log' });
    for (const [view, path] of Object.entries(paths)) before[view] = await get(first, path);
  } finally {
    await first.close();
  }

  const held = heldLog(engine.log);
  const again = await startInspector({ log: held.log, port: 0, index: new SqliteInspectorIndex(engine.db) });
  try {
    const reads: Record<string, number> = {};
    const after: Record<string, unknown> = {};
    for (const [view, path] of Object.entries(paths)) {
      held.read.events = 0;
      after[view] = await get(again, path);
      reads[view] = held.read.events;
    }
    assert.ok(
      Object.values(reads).every((n) => n <= MAX_READ),
      `each view read at most ${MAX_READ} of the session's ${last} events: ${JSON.stringify(reads)}`,
    );
    assert.equal(after.middle, before.middle, 'time travel to the middle');
    assert.is((after.middle as AtView).state, hydrate(SESSION, await engine.log.readSession(SESSION, { limit: middle })).value);
    assert.equal(after.end, before.end, 'time travel to the end');
    assert.is(after.chart, before.chart, 'the chart at the middle');
    assert.equal(after.conversation as ConversationView, before.conversation, 'the conversation at the head');
    const [s1, s2] = [before.session as SessionView, after.session as SessionView];
    assert.equal([s2.seq, s2.state, s2.timeline], [s1.seq, s1.state, s1.timeline], 'the session view');
  } finally {
    await again.close();
  }
});

test('restart index - checkpoints and marks of an older life of the session are not used: the views fold the log', async () => {
  const middle = Math.floor(last / 2) + 7;
  const index = new SqliteInspectorIndex(engine.db);
  const real = index.checkpointAt(SESSION, middle - 1)!;
  const marks = index.marksOf(SESSION);
  assert.ok(real && marks.length > 2, 'the first test kept an index');
  // what a session deleted and written again would have left (a worker that kept the rows of the older life)
  const forged = { ...real, context: { ...real.context, tags: { life: 'older' }, head: { ...real.context.head!, id: 'evt_older_life' } } };
  const db = engine.db;
  db.prepare('UPDATE inspector_checkpoint SET data = ? WHERE session_id = ? AND seq = ?').run(JSON.stringify(forged), SESSION, real.context.seq);
  const lastMark = marks.at(-1)!;
  db.prepare('UPDATE inspector_mark SET data = ? WHERE session_id = ? AND seq = ?').run(
    JSON.stringify({ ...lastMark, eventId: 'evt_older_life', first: lastMark.first + 1_000 }),
    SESSION,
    lastMark.seq,
  );
  const held = heldLog(engine.log);
  const inspector = await startInspector({ log: held.log, port: 0, index: new SqliteInspectorIndex(engine.db) });
  try {
    const at = await get<AtView>(inspector, `/api/sessions/${SESSION}/at/${middle}`);
    const conversation = await get<ConversationView>(inspector, `/api/sessions/${SESSION}/conversation`);
    const fresh = await startInspector({ log: engine.log, port: 0 }); // no index kept: folded from the whole log
    try {
      assert.equal(at, await get<AtView>(fresh, `/api/sessions/${SESSION}/at/${middle}`), 'time travel to the middle');
      assert.equal(at.context.tags, {}, 'not the tags of the older life');
      assert.equal(conversation, await get<ConversationView>(fresh, `/api/sessions/${SESSION}/conversation`), 'the conversation at the head');
    } finally {
      await fresh.close();
    }
  } finally {
    await inspector.close();
  }
});

test.run();
