/**
 * A restarted inspector resumes its follow of the log where its previous run left it (kept beside the
 * log: the position, every session's state, the timeline's blocks): the list and the session tree
 * answer at once from what was kept plus the log's tail, and the timeline's type and time queries
 * read a bounded stretch, never the whole session. Counted through the log (spyLog): what the
 * subscription delivers and what is read. Answers are those of an inspector that folded the whole log.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEngine, type Engine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { startInspector, type Inspector } from '../../src/inspector/server.ts';
import { SqliteInspectorIndex } from '../../src/inspector/sqlite-index.ts';
import { TIMELINE_BLOCK } from '../../src/inspector/index-store.ts';
import type { SessionView } from '../../src/inspector/views.ts';
import type { TimelinePage } from '../../src/inspector/view-types.ts';
import { waitFor } from '../../src/testing/wait.ts';
import type { EventLog, Subscription } from '../../src/events/event-log.ts';
import { spyLog } from '../support/spy-log.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
const LONG = 'ses_tail_long';
const OTHER = 'ses_tail_other';
/** Events the restart may read for the long session: its last timeline block and the tail, never the session. */
const MAX_READ = 2 * 1_000;
let engine: Engine;

test.before(async () => {
  engine = await openEngine({ file: tmp.file('tail.db'), runner: echoRunner({ steps: 1 }) });
  for (let turn = 0; (await engine.log.lastSeq(LONG)) < TIMELINE_BLOCK + 400; turn++) {
    await engine.admit(LONG, { prompt: `turn number ${turn} of the long session` });
    await engine.awaitIdle(LONG);
  }
  await engine.admit(OTHER, { prompt: 'a session of its own' });
  await engine.awaitIdle(OTHER);
});

test.after(async () => {
  await engine?.close();
  tmp.remove();
});

async function get<T>(inspector: Inspector, path: string): Promise<T> {
  const res = await fetch(new URL(path, inspector.url));
  const body = await res.json();
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`);
  return body as T;
}

interface Listed {
  position: number;
  complete: boolean;
  sessions: { sessionId: string; state: string; seq: number; lastType: string; pending: number }[];
}

test('restart tail - a first start over a log not indexed yet: the list answers at once with the progress, the page shows it', async () => {
  const head = await engine.log.head();
  // a follow that has not got far yet (a first start over a long log): its subscription delivers nothing
  const held = Object.create(engine.log) as EventLog;
  held.subscribe = (): Subscription => ({ position: 0, close: async () => undefined });
  const inspector = await startInspector({ log: held, port: 0, index: new SqliteInspectorIndex(engine.db) });
  try {
    const listed = await get<Listed & { indexing: unknown }>(inspector, '/api/sessions');
    assert.equal([listed.complete, listed.indexing], [false, { folded: 0, of: head }], 'not complete, and how far the indexing is');
    const page = await (await fetch(inspector.url)).text();
    assert.match(page, 'data-testid="indexing"');
    const view = await get<SessionView>(inspector, `/api/sessions/${OTHER}`);
    assert.is(view.seq, await engine.log.lastSeq(OTHER), 'a session view answers from the log meanwhile');
  } finally {
    await inspector.close();
  }
});

test('restart tail - the list, the tree and the timeline resume from the kept index and the log past it', async () => {
  const first = await startInspector({ log: engine.log, port: 0, index: new SqliteInspectorIndex(engine.db) });
  try {
    const head = await engine.log.head();
    await waitFor(() => first.store.getSnapshot().context.position >= head, { what: 'the first inspector to follow the log' });
  } finally {
    await first.close();
  }
  const kept = await engine.log.head();
  // the log grows while no inspector follows it: the tail
  for (let turn = 0; turn < 3; turn++) {
    await engine.admit(LONG, { prompt: `a turn after the restart ${turn}` });
    await engine.awaitIdle(LONG);
  }
  await engine.admit('ses_tail_new', { prompt: 'a session made while the inspector was down' });
  await engine.awaitIdle('ses_tail_new');
  const tail = (await engine.log.head()) - kept;
  const last = await engine.log.lastSeq(LONG);
  const middleTime = (await engine.log.readSession(LONG, { afterSeq: Math.floor(last / 2), limit: 1 }))[0]!.time;
  const paths = {
    list: '/api/sessions',
    session: `/api/sessions/${LONG}`,
    other: `/api/sessions/${OTHER}`,
    settled: `/api/sessions/${LONG}/events?type=execution.settled&limit=50`,
    settledBefore: `/api/sessions/${LONG}/events?type=execution.*&before=${TIMELINE_BLOCK + 5}&limit=20`,
    atTime: `/api/sessions/${LONG}/events?time=${middleTime}&limit=10`,
  };

  const counted = { delivered: 0, read: 0, after: -1 };
  const log = spyLog(engine.log, {
    afterBatch: (events) => (counted.delivered += events.length),
    afterRead: (events) => (counted.read += events.length),
    subscribed: (after) => (counted.after = after),
  });
  const again = await startInspector({ log, port: 0, index: new SqliteInspectorIndex(engine.db) });
  const answers: Record<string, unknown> = {};
  try {
    const head = await engine.log.head();
    await waitFor(() => again.store.getSnapshot().context.position >= head, { what: 'the restarted inspector to follow the tail' });
    for (const [view, path] of Object.entries(paths)) answers[view] = await get(again, path);
  } finally {
    await again.close();
  }
  assert.is(counted.after, kept, 'the follow resumed where the last run kept it');
  assert.is(counted.delivered, tail, `the subscription delivered the tail only (${tail} events)`);
  assert.ok(counted.read <= MAX_READ, `the restart and its views read ${counted.read} events of the log (at most ${MAX_READ}; the long session has ${last})`);

  const whole = await startInspector({ log: engine.log, port: 0 }); // no index kept: folded from the whole log
  try {
    for (const [view, path] of Object.entries(paths)) {
      const expected = await get<unknown>(whole, path);
      if (view === 'list') {
        const [a, b] = [answers.list as Listed, expected as Listed];
        assert.is(a.complete, true);
        assert.equal(a.sessions, b.sessions, 'the list: every session, the one made while down too');
      } else if (view === 'session' || view === 'other') {
        const [a, b] = [answers[view] as SessionView, expected as SessionView];
        assert.equal([a.seq, a.state, a.tree, a.timeline], [b.seq, b.state, b.tree, b.timeline], `the ${view} view and its tree`);
      } else {
        assert.equal(answers[view] as TimelinePage, expected as TimelinePage, `the timeline: ${view}`);
      }
    }
  } finally {
    await whole.close();
  }
});

test.run();
