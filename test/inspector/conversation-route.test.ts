/**
 * The conversation over HTTP (GET /api/sessions/:id/conversation) and its marks
 * (conversation-marks.ts): at any sequence it equals a fold of the prefix, read from the nearest
 * mark and not from seq 0; pages of entries hold each entry once; bad queries are 400 with what to
 * send, a sequence past the session's last is 404; a session deleted and written again is folded afresh.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEngine, type Engine } from '../../src/engine.ts';
import type { EventLog } from '../../src/events/event-log.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { emptyConversation, foldConversation } from '../../src/inspector/conversation.ts';
import { conversationAt, conversationPage, ENTRIES_SHOWN, type ConversationView } from '../../src/inspector/conversation-at.ts';
import { ConversationMarks } from '../../src/inspector/conversation-marks.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { startInspector, type Inspector } from '../../src/inspector/server.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
const SESSION = 'ses_conv';
let engine: Engine;
let inspector: Inspector;

test.before(async () => {
  engine = await openEngine({ file: tmp.file('conv.db'), runner: echoRunner({ steps: 2 }) });
  for (let turn = 0; turn < 12; turn++) {
    await engine.admit(SESSION, { prompt: `question number ${turn} here` });
    // now and then a second prompt queued behind a running turn: no mark until it is taken too
    if (turn % 4 === 1) await engine.admit(SESSION, { prompt: `and a follow-up to ${turn}` });
    await engine.awaitIdle(SESSION);
  }
  inspector = await startInspector({ log: engine.log, port: 0 });
});

test.after(async () => {
  await inspector?.close();
  await engine?.close();
  tmp.remove();
});

async function get<T = unknown>(path: string): Promise<{ status: number; body: T }> {
  const res = await fetch(new URL(path, inspector.url));
  return { status: res.status, body: (await res.json()) as T };
}

/** The log, counting where each readSession starts. */
function countingLog(log: EventLog): { log: EventLog; reads: number[]; events: number } {
  const counted = { log: Object.create(log) as EventLog, reads: [] as number[], events: 0 };
  counted.log.readSession = async (sessionId, options) => {
    counted.reads.push(options?.afterSeq ?? 0);
    const events = await log.readSession(sessionId, options);
    counted.events += events.length;
    return events;
  };
  return counted;
}

/** The marks of the session's log so far, fed in batches as a subscription would. */
async function marksOf(log: EventLog, every: number): Promise<ConversationMarks> {
  const marks = new ConversationMarks(every);
  const all = await log.readAll();
  for (let i = 0; i < all.length; i += 7) marks.add(all.slice(i, i + 7));
  return marks;
}

const page = (events: SessionEvent[], seq: number, query: { limit: number; before?: number }) =>
  conversationPage(foldConversation(emptyConversation(SESSION), events.slice(0, seq)), events.length, { limit: query.limit, before: query.before });

test('conversation at - equals a fold of the prefix at every sequence and page, reading only the events since the nearest mark', async () => {
  const events = await engine.log.readSession(SESSION);
  const counted = countingLog(engine.log);
  const marks = await marksOf(engine.log, 10);
  const list = marks.marksOf(SESSION);
  assert.ok(list.length >= 5, `a mark about every 10 events where the conversation was settled (${list.map((m) => m.seq)})`);
  assert.equal(
    list.map((m) => m.first),
    list.map((m) => foldConversation(emptyConversation(SESSION), events.slice(0, m.seq)).entries.length),
    'each mark counts the entries before it',
  );
  const at = conversationAt({ log: counted.log, marks });
  let checked = 0;
  for (let seq = 0; seq <= events.length; seq++) {
    counted.reads.length = 0;
    counted.events = 0;
    const view = await at(SESSION, seq, events.length, { limit: 3 });
    assert.equal(view, page(events, seq, { limit: 3 }), `at ${seq}`);
    const read = counted.events;
    assert.equal(await at(SESSION, seq, events.length, { limit: ENTRIES_SHOWN }), page(events, seq, { limit: ENTRIES_SHOWN }), `at ${seq}, a long page`);
    const mark = list.filter((m) => m.seq <= seq).at(-1);
    // from a mark, its own event is read again (the log must still hold it)
    assert.equal(counted.reads.slice(0, 1), seq === 0 ? [] : [mark ? mark.seq - 1 : 0], `seq ${seq}: folded from the mark at ${mark?.seq ?? 0}`);
    if ((view.before ?? 0) >= (mark?.first ?? 0)) {
      // the page is all after the mark: only the events since it were read
      assert.ok(read <= seq - (mark?.seq ?? 0) + 1, `seq ${seq}: read ${read} events`);
      checked++;
    }
  }
  assert.ok(checked > events.length / 2, `${checked} of ${events.length} views read only since their mark`);
  // pages of older entries fold only the span between the marks around them
  const whole = foldConversation(emptyConversation(SESSION), events);
  for (const before of [1, 5, 17, whole.entries.length - 3]) {
    counted.reads.length = 0;
    counted.events = 0;
    const view = await at(SESSION, events.length, events.length, { limit: 4, before });
    assert.equal(view, page(events, events.length, { limit: 4, before }), `before ${before}`);
    assert.ok(counted.events < events.length, `before ${before}: read ${counted.events} of ${events.length} events`);
  }
});

test('conversation at - a session deleted and written again is folded afresh, not from the marks of the old one', async () => {
  const id = 'ses_again';
  await engine.admit(id, { prompt: 'the first life of this id' });
  await engine.awaitIdle(id);
  await engine.admit(id, { prompt: 'still the first life' });
  await engine.awaitIdle(id);
  const marks = new ConversationMarks(5);
  const old = await engine.log.readSession(id);
  marks.add(old);
  assert.ok(marks.marksOf(id).length > 0);
  const at = conversationAt({ log: engine.log, marks });
  const view = (events: SessionEvent[]) =>
    conversationPage(foldConversation(emptyConversation(id), events), events.length, { limit: ENTRIES_SHOWN, before: undefined });
  assert.equal(await at(id, old.length, old.length, { limit: ENTRIES_SHOWN }), view(old));
  await engine.delete(id, { reason: 'test' });
  await engine.admit(id, { prompt: 'a second life' });
  await engine.awaitIdle(id);
  await engine.admit(id, { prompt: 'and more of it' });
  await engine.awaitIdle(id);
  const fresh = await engine.log.readSession(id);
  const c = await at(id, fresh.length, fresh.length, { limit: ENTRIES_SHOWN });
  assert.equal(c, view(fresh));
  assert.not.ok(JSON.stringify(c).includes('first life'));
  marks.add(fresh);
  const ids = new Set(fresh.map((e) => e.id));
  assert.ok(marks.marksOf(id).length > 0 && marks.marksOf(id).every((m) => ids.has(m.eventId)), 'the new life is marked afresh');
});

test('conversation route - the head, a travelled sequence, and pages of entries with a before cursor', async () => {
  const events = await engine.log.readSession(SESSION);
  const head = await get<ConversationView>(`/api/sessions/${SESSION}/conversation`);
  assert.is(head.status, 200);
  const whole = foldConversation(emptyConversation(SESSION), events);
  assert.equal(head.body, conversationPage(whole, events.length, { limit: ENTRIES_SHOWN, before: undefined }));
  assert.equal([head.body.seq, head.body.lastSeq, head.body.total, head.body.asOf], [events.length, events.length, whole.entries.length, events.at(-1)!.time]);
  assert.equal(head.body.limits, { text: 4000, value: 1000, url: 500 });

  const mid = 20;
  const travelled = await get<ConversationView>(`/api/sessions/${SESSION}/conversation?seq=${mid}`);
  assert.equal(
    travelled.body,
    conversationPage(foldConversation(emptyConversation(SESSION), events.slice(0, mid)), events.length, { limit: ENTRIES_SHOWN, before: undefined }),
  );
  assert.is(travelled.body.seq, mid);

  const seen: number[] = [];
  let before: number | null | undefined;
  for (let pages = 0; before !== null; pages++) {
    assert.ok(pages < 100);
    const page = await get<ConversationView>(`/api/sessions/${SESSION}/conversation?limit=7${before === undefined ? '' : `&before=${before}`}`);
    seen.unshift(...page.body.entries.map((e) => e.index));
    before = page.body.before;
  }
  assert.equal(
    seen,
    whole.entries.map((_, i) => i),
    'each entry once, in order',
  );
});

test('conversation route - bad queries are 400 saying what to send; past the last sequence or an unknown session 404', async () => {
  const lastSeq = await engine.log.lastSeq(SESSION);
  for (const [query, says] of [
    ['?seq=abc', 'Invalid seq "abc"'],
    ['?limit=0', 'from 1 to 500'],
    ['?limit=501', 'from 1 to 500'],
    ['?before=-1', 'Invalid before'],
    ['?page=2', 'Unknown query parameter "page": the conversation route takes seq, limit, before'],
  ] as const) {
    const r = await get<{ error: { code: string; message: string } }>(`/api/sessions/${SESSION}/conversation${query}`);
    assert.is(r.status, 400, query);
    assert.match(r.body.error.message, says);
  }
  const past = await get<{ error: { message: string } }>(`/api/sessions/${SESSION}/conversation?seq=${lastSeq + 1}`);
  assert.is(past.status, 404);
  assert.match(past.body.error.message, `pick a sequence from 0 to ${lastSeq}`);
  assert.is((await get(`/api/sessions/ses_nobody/conversation`)).status, 404);
  assert.is((await get(`/api/sessions/bad%20id/conversation`)).status, 400);
});

test.run();
