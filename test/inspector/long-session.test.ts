/**
 * The inspector on a session longer than its checkpoint intervals (real engine, echo runner):
 * time travel equals a full fold at every interesting sequence and starts from a checkpoint, not
 * seq 0; rows at a sequence equal a fresh projection of the prefix (projection checkpoints every
 * 100 events here); the timeline pages hold every event exactly once, and filter by type, time
 * and text.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEngine, type Engine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import type { EventLog } from '../../src/events/event-log.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { hydrate } from '../../src/machines/decider.ts';
import { Projector, sessionRows } from '../../src/projector/index.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { startInspector, type Inspector } from '../../src/inspector/server.ts';
import { projectedRowsAt, ROWS_LIMIT } from '../../src/inspector/rows.ts';
import { ConversationMarks } from '../../src/inspector/conversation-marks.ts';
import { CHECKPOINT_EVERY, currentSnapshot } from '../../src/inspector/store.ts';
import { travel } from '../../src/inspector/travel.ts';
import type { TimelinePage } from '../../src/inspector/view-types.ts';
import type { AtView, SessionView } from '../../src/inspector/views.ts';
import { emptyConversation, foldConversation } from '../../src/inspector/conversation.ts';
import { conversationPage, ENTRIES_SHOWN } from '../../src/inspector/conversation-at.ts';
import { TIME_EVERY, TimelineIndex } from '../../src/inspector/timeline-index.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
const SESSION = 'ses_long';
let engine: Engine;
let inspector: Inspector;
let events: SessionEvent[];

test.before(async () => {
  engine = await openEngine({ file: tmp.file('long.db'), runner: echoRunner({ steps: 1 }) });
  for (let turn = 0; (await engine.log.lastSeq(SESSION)) < 2 * CHECKPOINT_EVERY + 300; turn++) {
    await engine.admit(SESSION, { prompt: `turn number ${turn} of the long session` });
    await engine.awaitIdle(SESSION);
  }
  events = await engine.log.readSession(SESSION);
  inspector = await startInspector({ log: engine.log, port: 0 });
  await get('/api/sessions'); // the store has followed the whole log
});

test.after(async () => {
  await inspector?.close();
  await engine?.close();
  tmp.remove();
});

async function get<T = unknown>(path: string): Promise<T> {
  const res = await fetch(new URL(path, inspector.url));
  const body = (await res.json()) as T;
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** The log, counting how far back each readSession starts. */
function countingLog(log: EventLog): { log: EventLog; reads: number[] } {
  const reads: number[] = [];
  const wrapped = Object.create(log) as EventLog;
  wrapped.readSession = (sessionId, options) => {
    reads.push(options?.afterSeq ?? 0);
    return log.readSession(sessionId, options);
  };
  return { log: wrapped, reads };
}

test("long session - before the index has followed the log, a view near the head starts from the workers' snapshot, one the log contradicts is passed over", async () => {
  const last = events.length;
  const none = { checkpointAt: () => undefined }; // an index that has followed nothing yet
  const empty = () => ({ ...inspector.store.getSnapshot().context, sessions: {} }) as ReturnType<typeof inspector.store.getSnapshot>['context'];
  const near = hydrate(SESSION, events.slice(0, last - 20));
  for (const [name, snapshots, from] of [
    ["the workers' snapshot", { get: async () => near }, last - 21],
    ['none kept', { get: async () => undefined }, 0],
    ['one past the seq asked', { get: async () => hydrate(SESSION, events) }, 0],
    ['one at the seq asked', { get: async () => hydrate(SESSION, events.slice(0, last - 1)) }, last - 2],
    ['one the log contradicts', { get: async () => ({ ...near, context: { ...near.context, head: { ...near.context.head!, id: 'evt_forged' } } }) }, 0],
  ] as const) {
    const counted = countingLog(engine.log);
    const at = await travel(counted.log, empty, SESSION, last - 1, none, snapshots);
    assert.equal(at.snapshot, hydrate(SESSION, events.slice(0, last - 1)), name);
    assert.is(at.event?.id, events[last - 2]!.id, name);
    assert.is(counted.reads.at(-1), from, `${name}: the fold starts after ${from}`);
  }
});

test('long session - time travel equals a full fold at every sequence asked, from the nearest checkpoint', async () => {
  const last = events.length;
  const context = () => inspector.store.getSnapshot().context;
  for (let k = 1; k <= Math.floor(last / CHECKPOINT_EVERY); k++)
    assert.is(inspector.index.checkpointAt(SESSION, k * CHECKPOINT_EVERY)?.context.seq, k * CHECKPOINT_EVERY, 'a checkpoint every CHECKPOINT_EVERY events');
  for (const seq of [0, 1, 2, CHECKPOINT_EVERY - 1, CHECKPOINT_EVERY, CHECKPOINT_EVERY + 1, CHECKPOINT_EVERY + 537, 2 * CHECKPOINT_EVERY, last - 1, last]) {
    const counted = countingLog(engine.log);
    const at = await travel(counted.log, context, SESSION, seq, inspector.index);
    assert.equal(at.snapshot, hydrate(SESSION, events.slice(0, seq)), `snapshot at ${seq}`);
    assert.equal(at.previous, seq === 0 ? null : hydrate(SESSION, events.slice(0, seq - 1)), `previous at ${seq}`);
    assert.is(at.event?.id ?? null, seq === 0 ? null : events[seq - 1]!.id);
    const live = currentSnapshot(context(), SESSION, seq - 1)?.context.seq;
    const from = live ?? inspector.index.checkpointAt(SESSION, seq - 1)?.context.seq ?? 0;
    assert.ok(seq < CHECKPOINT_EVERY + 1 || from >= CHECKPOINT_EVERY, `seq ${seq} starts from a checkpoint`);
    // from a checkpoint, its own event is read again (the log must still hold it)
    const after = live !== undefined || from === 0 ? from : from - 1;
    assert.ok(
      counted.reads.every((read) => read === after),
      `seq ${seq}: read from ${from} only, read ${JSON.stringify(counted.reads)}`,
    );
  }
  const view = await get<AtView>(`/api/sessions/${SESSION}/at/${CHECKPOINT_EVERY + 537}`);
  assert.is(view.seq, CHECKPOINT_EVERY + 537);
  assert.is(view.state, hydrate(SESSION, events.slice(0, CHECKPOINT_EVERY + 537)).value);
});

test('long session - rows at a sequence equal a fresh projection of the prefix (bounded to the latest rows)', async () => {
  const counted = countingLog(engine.log);
  const rowsAt = projectedRowsAt({ log: counted.log, every: 100 });
  const db = openDatabase(':memory:');
  migrate(db);
  const projector = new Projector(db, { name: 'truth' });
  let projected = 0;
  // forwards, then backwards: later requests start from the images the earlier ones made
  let projectedUpTo = 0; // the highest image made so far: a first visit past it projects from there
  for (const [i, seq] of [250, 1_234, events.length, 99, 1_200, 1_234].entries()) {
    if (seq < projected) {
      db.exec(
        'DELETE FROM session_execution; DELETE FROM session_input; DELETE FROM session_message; DELETE FROM session_recovery; DELETE FROM projector_checkpoint;',
      );
      projected = 0;
    }
    projector.apply(events.slice(projected, seq).map((e) => ({ ...e, position: e.seq })));
    projected = seq;
    const truth = sessionRows(db, SESSION);
    counted.reads.length = 0;
    const rows = await rowsAt(SESSION, seq);
    assert.equal(rows.executions, truth.executions, `executions at ${seq}`);
    assert.equal(rows.recoveries, truth.recoveries, `recoveries at ${seq}`);
    assert.equal(rows.inputs, truth.inputs.slice(-ROWS_LIMIT), `inputs at ${seq}`);
    assert.equal(rows.messages, truth.messages.slice(-ROWS_LIMIT), `messages at ${seq}`);
    assert.equal(rows.counts, {
      executions: truth.executions.length,
      recoveries: truth.recoveries.length,
      inputs: truth.inputs.length,
      messages: truth.messages.length,
    });
    const start = i < 3 ? projectedUpTo : Math.floor(seq / 100) * 100;
    assert.is(counted.reads[0] ?? seq, start, `seq ${seq} projected from seq ${start}: ${JSON.stringify(counted.reads)}`);
    projectedUpTo = Math.max(projectedUpTo, Math.floor(seq / 100) * 100);
  }
  db.close();
});

test('long session - the session view carries one page, not the timeline; pages hold every event exactly once', async () => {
  const view = await get<SessionView>(`/api/sessions/${SESSION}`);
  assert.is(view.lastSeq, events.length);
  const truth = hydrate(SESSION, events);
  assert.is(view.admittedTotal, truth.context.admitted.length);
  assert.ok(truth.context.admitted.length > 20, 'a context with more admissions than a view shows');
  assert.equal(view.context, { ...truth.context, admitted: truth.context.admitted.slice(-20) }, 'the context, its admitted ids cut to the latest 20');
  assert.is(view.timeline.events.length, 100);
  assert.equal(
    view.timeline.events.map((e) => e.seq),
    events.slice(-100).map((e) => e.seq),
  );
  assert.is(view.timeline.before, events.length - 99);
  assert.is(view.timeline.after, null);

  const backwards: number[] = [];
  for (let before: number | null = events.length + 1; before !== null; ) {
    const page: TimelinePage = await get(`/api/sessions/${SESSION}/events?before=${before}&limit=377`);
    backwards.unshift(...page.events.map((e) => e.seq));
    before = page.before;
  }
  assert.equal(
    backwards,
    events.map((e) => e.seq),
    'backwards: each event once, in order',
  );
  const forwards: number[] = [];
  for (let after: number | null = 0; after !== null; ) {
    const page: TimelinePage = await get(`/api/sessions/${SESSION}/events?after=${after}&limit=500`);
    forwards.push(...page.events.map((e) => e.seq));
    after = page.after;
  }
  assert.equal(
    forwards,
    events.map((e) => e.seq),
    'forwards: each event once, in order',
  );

  const around: TimelinePage = await get(`/api/sessions/${SESSION}/events?around=1500&limit=10`);
  assert.equal(
    around.events.map((e) => e.seq),
    [1495, 1496, 1497, 1498, 1499, 1500, 1501, 1502, 1503, 1504],
  );
  assert.equal(around.events[5]!.payload, events[1499]!.payload);
});

test('long session - filter by type, jump by time, search payload text', async () => {
  const claims = events.filter((e) => e.type === 'execution.claimed').map((e) => e.seq);
  const byType: number[] = [];
  for (let before: number | null = events.length + 1; before !== null; ) {
    const page: TimelinePage = await get(`/api/sessions/${SESSION}/events?type=execution.claimed&before=${before}&limit=40`);
    assert.ok(page.events.every((e) => e.type === 'execution.claimed'));
    byType.unshift(...page.events.map((e) => e.seq));
    before = page.before;
  }
  assert.equal(byType, claims, 'every claim once');
  const family: TimelinePage = await get(`/api/sessions/${SESSION}/events?type=execution.*,input.admitted&limit=500`);
  assert.ok(family.events.length > 0 && family.events.every((e) => e.type.startsWith('execution.') || e.type === 'input.admitted'));
  assert.equal(
    family.events.map((e) => e.seq),
    events
      .filter((e) => e.type.startsWith('execution.') || e.type === 'input.admitted')
      .slice(-500)
      .map((e) => e.seq),
  );

  const target = events[1733]!;
  const firstAtTime = events.find((e) => e.time >= target.time)!.seq;
  for (const time of [String(target.time), new Date(target.time).toISOString()]) {
    const page: TimelinePage = await get(`/api/sessions/${SESSION}/events?time=${encodeURIComponent(time)}&limit=20`);
    assert.ok(
      page.events.some((e) => e.seq === firstAtTime),
      `time ${time}: the page holds seq ${firstAtTime}`,
    );
    assert.is(page.events[10]!.seq, firstAtTime, 'centred on it');
  }

  const admitted = events.find((e) => e.type === 'input.admitted' && JSON.stringify(e.payload).includes('turn number 42 of'))!;
  const found: TimelinePage = await get(`/api/sessions/${SESSION}/events?q=${encodeURIComponent('TURN NUMBER 42 of')}&type=input.admitted&after=0`);
  assert.equal(
    found.events.map((e) => e.seq),
    [admitted.seq],
    'case-insensitive, in payloads, with the type filter',
  );
  const everywhere = events.filter((e) => JSON.stringify(e.payload).toLowerCase().includes('number 42 of')).map((e) => e.seq);
  const searched: number[] = [];
  let requests = 0;
  for (let before: number | null = events.length + 1; before !== null; requests++) {
    const page: TimelinePage = await get(`/api/sessions/${SESSION}/events?q=number%2042%20of&before=${before}&limit=1`);
    searched.unshift(...page.events.map((e) => e.seq));
    before = page.before;
  }
  assert.equal(searched, everywhere, 'paging a search backwards finds every match once');
  assert.ok(requests >= everywhere.length, 'one match per page');
});

test('long session - the conversation at a sequence equals a fold of the prefix, forwards, back to a kept fold and forwards again', async () => {
  for (const seq of [events.length, CHECKPOINT_EVERY + 537, 3, 2 * CHECKPOINT_EVERY, CHECKPOINT_EVERY + 537, events.length - 1, events.length]) {
    const view = await get(`/api/sessions/${SESSION}/conversation?seq=${seq}`);
    const truth = foldConversation(emptyConversation(SESSION), events.slice(0, seq));
    assert.equal(view, conversationPage(truth, events.length, { limit: ENTRIES_SHOWN, before: undefined }), `conversation at ${seq}`);
  }
});

test('long session - rows from a mark equal a fresh projection of the prefix, reading only the events since the mark', async () => {
  const counted = countingLog(engine.log);
  const marks = new ConversationMarks(25);
  marks.add(events);
  const list = marks.marksOf(SESSION);
  assert.ok(list.length > 20, `marks where the session was settled (${list.length})`);
  const rowsAt = projectedRowsAt({ log: counted.log, every: 1_000_000, marks });
  const db = openDatabase(':memory:');
  migrate(db);
  const projector = new Projector(db, { name: 'truth' });
  let fromMarks = 0;
  for (let seq = 1; seq <= events.length; seq += seq < 700 ? 61 : 17) {
    projector.apply(
      events
        .slice(db.prepare('SELECT COALESCE(MAX(position), 0) FROM projector_checkpoint').pluck().get() as number, seq)
        .map((e) => ({ ...e, position: e.seq })),
    );
    const truth = sessionRows(db, SESSION);
    counted.reads.length = 0;
    const rows = await rowsAt(SESSION, seq);
    assert.equal(rows.inputs, truth.inputs.slice(-ROWS_LIMIT), `inputs at ${seq}`);
    assert.equal(rows.messages, truth.messages.slice(-ROWS_LIMIT), `messages at ${seq}`);
    assert.equal([rows.executions, rows.recoveries], [truth.executions, truth.recoveries], `executions and recoveries at ${seq}`);
    assert.equal(rows.counts, {
      executions: truth.executions.length,
      recoveries: truth.recoveries.length,
      inputs: truth.inputs.length,
      messages: truth.messages.length,
    });
    const from = counted.reads[0]!;
    if (from === 0) continue; // near the start: projected from seq 0
    fromMarks++;
    const mark = list.find((m) => m.seq === from + 1);
    assert.ok(mark, `seq ${seq}: projected from a mark (read after ${from})`);
    // the latest mark with ROWS_LIMIT inputs admitted since it, up to the latest mark at or before seq
    const head = list.filter((m) => m.seq <= seq).at(-1)!;
    const admitted = (m: { seq: number }) => events.filter((e) => e.type === 'input.admitted' && e.seq > m.seq && e.seq <= head.seq).length;
    const later = list.filter((m) => m.seq > mark!.seq && m.seq <= head.seq);
    assert.ok(
      admitted(mark!) >= ROWS_LIMIT && later.every((m) => admitted(m) < ROWS_LIMIT),
      `seq ${seq}: from the latest mark that shows ${ROWS_LIMIT} inputs`,
    );
  }
  assert.ok(fromMarks > 50, `${fromMarks} sequences projected from a mark`);
  db.close();
});

test('long session - the timeline index finds the first event at a time from one time per TIME_EVERY events, reading at most that many', async () => {
  const index = new TimelineIndex();
  index.add(events);
  let limits = 0;
  const log = Object.create(engine.log) as EventLog;
  log.readSession = (sessionId, options) => {
    limits = Math.max(limits, options?.limit ?? Number.POSITIVE_INFINITY);
    return engine.log.readSession(sessionId, options);
  };
  const first = (time: number) => events.find((e) => e.time >= time)?.seq ?? null;
  for (let i = 0; i < events.length; i += 13) {
    for (const time of [events[i]!.time - 1, events[i]!.time, events[i]!.time + 1]) {
      assert.is(await index.seqAtTime(log, SESSION, time, events.length), first(time), `time ${time}`);
    }
  }
  assert.is(await index.seqAtTime(log, SESSION, events.at(-1)!.time + 1, events.length), null, 'after the last event: none');
  assert.is(await index.seqAtTime(log, SESSION, events[0]!.time - 1, events.length), 1);
  const middle = events[Math.floor(events.length / 2)]!;
  assert.is(
    await index.seqAtTime(log, SESSION, middle.time, middle.seq - 1),
    first(middle.time) === middle.seq ? null : first(middle.time),
    'up to a sequence',
  );
  assert.ok(limits <= TIME_EVERY, `read at most ${TIME_EVERY} events at once (${limits})`);
});

test.run();
