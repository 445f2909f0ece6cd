/**
 * The conversation over HTTP (GET /api/sessions/:id/conversation) and its kept folds
 * (conversation-at.ts): at any sequence it equals a fold of the prefix, read from the nearest kept
 * fold and not from seq 0; pages of entries hold each entry once; bad queries are 400 with what to
 * send, a sequence past the session's last is 404; a session deleted and written again is folded afresh.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEngine, type Engine } from '../../src/engine.ts';
import type { EventLog } from '../../src/events/event-log.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { emptyConversation, foldConversation } from '../../src/inspector/conversation.ts';
import { conversationAt, conversationPage, ENTRIES_SHOWN, type ConversationView } from '../../src/inspector/conversation-at.ts';
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
function countingLog(log: EventLog): { log: EventLog; reads: number[] } {
  const reads: number[] = [];
  const wrapped = Object.create(log) as EventLog;
  wrapped.readSession = (sessionId, options) => {
    reads.push(options?.afterSeq ?? 0);
    return log.readSession(sessionId, options);
  };
  return { log: wrapped, reads };
}

test('conversation at - equals a fold of the prefix at every sequence asked, read from the nearest kept fold or the latest one', async () => {
  const events = await engine.log.readSession(SESSION);
  const counted = countingLog(engine.log);
  const at = conversationAt({ log: counted.log, every: 10 });
  let furthest = 0; // every multiple of 10 up to the furthest sequence asked is kept, and the latest fold
  let latest = 0;
  for (const seq of [0, 1, 9, 10, 11, 37, events.length, 25, 3, events.length - 1]) {
    counted.reads.length = 0;
    const c = await at(SESSION, seq);
    assert.equal(c, foldConversation(emptyConversation(SESSION), events.slice(0, seq)), `at ${seq}`);
    const from = Math.max(Math.min(Math.floor(seq / 10) * 10, Math.floor(furthest / 10) * 10), latest <= seq ? latest : 0);
    // a kept fold's own last event is read again (the log must still hold it), also when it is the one asked for
    assert.equal(
      counted.reads[0] ?? 'none',
      seq === 0 ? 'none' : from === 0 ? 0 : from - 1,
      `seq ${seq}: folded from the kept fold at ${from} (${counted.reads})`,
    );
    furthest = Math.max(furthest, seq);
    latest = seq;
  }
});

test('conversation at - a session deleted and written again is folded afresh, not from the kept folds of the old one', async () => {
  const id = 'ses_again';
  await engine.admit(id, { prompt: 'the first life of this id' });
  await engine.awaitIdle(id);
  await engine.admit(id, { prompt: 'still the first life' });
  await engine.awaitIdle(id);
  const at = conversationAt({ log: engine.log, every: 5 });
  const old = await engine.log.readSession(id);
  assert.equal(await at(id, old.length), foldConversation(emptyConversation(id), old));
  await engine.delete(id, { reason: 'test' });
  await engine.admit(id, { prompt: 'a second life' });
  await engine.awaitIdle(id);
  await engine.admit(id, { prompt: 'and more of it' });
  await engine.awaitIdle(id);
  const fresh = await engine.log.readSession(id);
  const c = await at(id, fresh.length);
  assert.equal(c, foldConversation(emptyConversation(id), fresh));
  assert.not.ok(JSON.stringify(c).includes('first life'));
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
