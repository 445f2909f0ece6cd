/**
 * The HTTP and SSE gateway in front of the embedded whole worker (`startSessiond` without NATS, its
 * live bus giving the deltas), over real HTTP: admit and the stream of the answer (deltas live,
 * committed events with ids), resume by Last-Event-ID (exactly what was missed, then live),
 * heartbeats, tokens and their reach (prefix, tag), CORS, body limits, errors with the protocol's
 * codes, a slow client that never holds a turn back, and no tokens off loopback.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request } from 'node:http';
import { startSessiond, type Sessiond } from '../../src/host.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { startGateway, type Gateway } from '../../src/gateway/server.ts';
import { engineLive } from '../../src/gateway/live.ts';
import { parseTokens } from '../../src/gateway/tokens.ts';
import { readSse } from '../support/sse.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../../src/testing/wait.ts';

const tmp = tempDir();
let sessiond: Sessiond;
let open: Gateway;
let guarded: Gateway;

const WEB = 'web-token-0123456789abcdef';
const ACME = 'acme-token-0123456789abcdef';

test.before(async () => {
  sessiond = await startSessiond({ db: tmp.file('gw.db'), runner: echoRunner({ steps: 1 }) });
  open = await startGateway({ sessions: sessiond, live: engineLive(sessiond), port: 0, heartbeatMs: 200 });
  guarded = await startGateway({
    sessions: sessiond,
    live: engineLive(sessiond),
    port: 0,
    corsOrigins: ['http://app.example'],
    maxBodyBytes: 2048,
    tokens: parseTokens(
      JSON.stringify({
        tokens: [
          { name: 'web', token: WEB, sessions: 'ses_web_' },
          { name: 'acme', token: ACME, tag: 'tenant=acme' },
        ],
      }),
      'test',
    ),
  });
});

test.after(async () => {
  await open?.close();
  await guarded?.close();
  await sessiond?.close();
  tmp.remove();
});

// biome-ignore lint/suspicious/noExplicitAny: JSON replies read loosely in assertions
type Body = Record<string, any>;

async function call(gw: Gateway, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(new URL(path, gw.url), {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : null) as Body };
}
const as = (token: string) => ({ authorization: `Bearer ${token}` });

test('admit over HTTP, then the stream: deltas live, committed events with their seq as id, in order', async () => {
  const stream = await readSse(new URL('/v1/sessions/ses_g1/events', open.url).href);
  assert.is(stream.status, 200);
  assert.match(stream.headers.get('content-type') ?? '', 'text/event-stream');
  const admitted = await call(open, 'POST', '/v1/sessions/ses_g1/inputs', { prompt: 'stream these words' });
  assert.is(admitted.status, 200);
  assert.equal([admitted.body.sessionId, admitted.body.created, admitted.body.admittedSeq], ['ses_g1', true, 1]);
  await stream.next((f) => f.json?.type === 'execution.settled');
  stream.close();
  const deltas = stream.frames.filter((f) => f.json?.type === 'text.delta');
  assert.is(deltas.map((f) => (f.json!.payload as { delta: string }).delta).join(''), 'stream these words');
  assert.ok(
    deltas.every((f) => f.id === undefined),
    'deltas carry no id',
  );
  const committed = stream.frames.filter((f) => f.id !== undefined);
  const logged = await sessiond.engine.log.readSession('ses_g1');
  assert.equal(
    committed.map((f) => [Number(f.id), f.json!.type]),
    logged.map((e) => [e.seq, e.type]),
  );
  assert.ok(stream.frames.indexOf(deltas[0]!) < stream.frames.findIndex((f) => f.json?.type === 'text.completed'), 'deltas before the text is committed');
  const status = await call(open, 'GET', '/v1/sessions/ses_g1');
  assert.equal([status.status, status.body.state], [200, 'settled']);
});

test('resume: Last-Event-ID gets exactly the events after it from the log, then live; heartbeats keep it open', async () => {
  await call(open, 'POST', '/v1/sessions/ses_g2/inputs', { prompt: 'first' });
  await sessiond.awaitIdle('ses_g2');
  const logged = await sessiond.engine.log.readSession('ses_g2');
  const cut = 3;
  const resumed = await readSse(new URL('/v1/sessions/ses_g2/events', open.url).href, { headers: { 'last-event-id': String(cut) } });
  await resumed.next((f) => f.id === String(logged.at(-1)!.seq));
  await call(open, 'POST', '/v1/sessions/ses_g2/inputs', { prompt: 'second' });
  await resumed.next((f) => f.json?.type === 'execution.settled' && Number(f.id) > logged.at(-1)!.seq);
  await waitFor(() => resumed.comments.some((c) => c.startsWith('heartbeat')), { what: 'a heartbeat' });
  resumed.close();
  const all = await sessiond.engine.log.readSession('ses_g2');
  assert.equal(
    resumed.frames.filter((f) => f.id !== undefined).map((f) => Number(f.id)),
    all.filter((e) => e.seq > cut).map((e) => e.seq),
    'nothing at or before the resume point, nothing missed, nothing twice',
  );
  const bad = await call(open, 'GET', '/v1/sessions/ses_g2/events?after=abc');
  assert.equal([bad.status, bad.body.error.code], [400, 'invalid_option']);
});

test('tokens: none is 401, unknown is 401; a prefix token starts and reaches only its ids; others are 404', async () => {
  const none = await call(guarded, 'GET', '/v1/sessions/ses_g1');
  assert.equal([none.status, none.body.error.code], [401, 'unauthorized']);
  assert.match(none.headers.get('www-authenticate') ?? '', 'Bearer');
  assert.is((await call(guarded, 'GET', '/v1/sessions/ses_g1', undefined, as('not-a-known-token-at-all'))).status, 401);
  const mine = await call(guarded, 'POST', '/v1/sessions/ses_web_1/inputs', { prompt: 'hi' }, as(WEB));
  assert.is(mine.status, 200, JSON.stringify(mine.body));
  const outside = await call(guarded, 'POST', '/v1/sessions/ses_g9/inputs', { prompt: 'hi' }, as(WEB));
  assert.equal([outside.status, outside.body.error.code], [404, 'not_found'], 'outside the prefix: the answer of every id out of reach');
  const other = await call(guarded, 'GET', '/v1/sessions/ses_g1', undefined, as(WEB));
  const missing = await call(guarded, 'GET', '/v1/sessions/ses_web_none', undefined, as(WEB));
  assert.equal(
    [other.status, other.body.error.message.replace('ses_g1', 'X')],
    [404, missing.body.error.message.replace('ses_web_none', 'X')],
    'the same answer as a session that does not exist',
  );
  const stream = await fetch(new URL('/v1/sessions/ses_g1/events?access_token=' + WEB, guarded.url));
  assert.is(stream.status, 404, 'nor its events');
  await stream.body?.cancel();
  await sessiond.awaitIdle('ses_web_1');
  const listed = await call(guarded, 'GET', '/v1/sessions', undefined, as(WEB));
  assert.equal(
    listed.body.sessions.map((s: { sessionId: string }) => s.sessionId),
    ['ses_web_1'],
  );
});

test('a prefix token lists full pages of its sessions, however many newer ones it may not see; ?prefix= narrows within its reach', async () => {
  assert.is((await call(guarded, 'POST', '/v1/sessions/ses_web_p1/inputs', { prompt: 'a', wake: false }, as(WEB))).status, 200);
  assert.is((await call(guarded, 'POST', '/v1/sessions/ses_web_p2/inputs', { prompt: 'b', wake: false }, as(WEB))).status, 200);
  for (let i = 0; i < 5; i++) assert.is((await call(open, 'POST', `/v1/sessions/ses_other_p${i}/inputs`, { prompt: 'c', wake: false })).status, 200);
  const first = await call(guarded, 'GET', '/v1/sessions?prefix=ses_web_p&limit=1', undefined, as(WEB));
  assert.equal(
    first.body.sessions.map((s: { sessionId: string }) => s.sessionId),
    ['ses_web_p2'],
    'a full page, not the newest sessions of all filtered down to none',
  );
  const second = await call(guarded, 'GET', `/v1/sessions?prefix=ses_web_p&limit=1&after=${first.body.next}`, undefined, as(WEB));
  assert.equal(
    second.body.sessions.map((s: { sessionId: string }) => s.sessionId),
    ['ses_web_p1'],
  );
  const mine = await call(guarded, 'GET', '/v1/sessions?limit=2', undefined, as(WEB));
  assert.equal(
    mine.body.sessions.map((s: { sessionId: string }) => s.sessionId),
    ['ses_web_p2', 'ses_web_p1'],
    'without ?prefix the token lists its own ids only, two of two',
  );
  const wider = await call(guarded, 'GET', '/v1/sessions?prefix=ses_&limit=2', undefined, as(WEB));
  assert.equal(wider.body.sessions, mine.body.sessions, 'a prefix wider than the grant lists what the grant reaches');
  const outside = await call(guarded, 'GET', '/v1/sessions?prefix=ses_other_', undefined, as(WEB));
  assert.equal([outside.status, outside.body.sessions, outside.body.next], [200, [], null], 'a prefix outside the grant lists nothing');
  const bad = await call(open, 'GET', '/v1/sessions?prefix=a%20b');
  assert.equal([bad.status, bad.body.error.code], [400, 'invalid_query']);
  assert.match(bad.body.error.message, 'idPrefix');
});

test('a tag token: new sessions get its tag, it lists and reaches only those, and may not change that tag', async () => {
  const made = await call(guarded, 'POST', '/v1/sessions/ses_acme_1/inputs', { prompt: 'hello', tags: { plan: 'gold' } }, as(ACME));
  assert.is(made.status, 200, JSON.stringify(made.body));
  await sessiond.awaitIdle('ses_acme_1');
  assert.equal((await sessiond.status('ses_acme_1')).tags, { plan: 'gold', tenant: 'acme' });
  const other = await call(guarded, 'POST', '/v1/sessions/ses_g1/inputs', { prompt: 'hijack' }, as(ACME));
  assert.is(other.status, 404, 'an untagged session is not reachable, even to admit');
  const wrong = await call(guarded, 'POST', '/v1/sessions/ses_acme_2/inputs', { prompt: 'x', tags: { tenant: 'evil' } }, as(ACME));
  assert.is(wrong.status, 403);
  const listed = await call(guarded, 'GET', '/v1/sessions', undefined, as(ACME));
  assert.equal(
    listed.body.sessions.map((s: { sessionId: string }) => s.sessionId),
    ['ses_acme_1'],
  );
  const retag = await call(guarded, 'POST', '/v1/sessions/ses_acme_1/tags', { tags: { tenant: null } }, as(ACME));
  assert.is(retag.status, 403);
  const fine = await call(guarded, 'POST', '/v1/sessions/ses_acme_1/tags', { tags: { plan: 'silver' } }, as(ACME));
  assert.is(fine.status, 200, JSON.stringify(fine.body));
  const fork = await call(guarded, 'POST', '/v1/sessions/ses_acme_1/fork', { sessionId: 'ses_acme_fork' }, as(ACME));
  assert.is(fork.status, 200, JSON.stringify(fork.body));
  assert.equal((await sessiond.status('ses_acme_fork')).tags, { tenant: 'acme' });
});

test('?called_by= lists the children of a session, each naming its parent; a bad id is a 400', async () => {
  await sessiond.admit('ses_gw_lead', { prompt: 'lead', wake: false });
  for (const kid of ['ses_gw_kid1', 'ses_gw_kid2']) await sessiond.engine.admit(kid, { prompt: 'work', wake: false, caller: 'ses_gw_lead' });
  const kids = await call(open, 'GET', '/v1/sessions?called_by=ses_gw_lead');
  assert.is(kids.status, 200);
  assert.equal(
    kids.body.sessions.map((s: Body) => [s.sessionId, s.calledBy, s.childCount]),
    [
      ['ses_gw_kid2', 'ses_gw_lead', 0],
      ['ses_gw_kid1', 'ses_gw_lead', 0],
    ],
  );
  const lead = await call(open, 'GET', '/v1/sessions?prefix=ses_gw_lead');
  assert.equal(
    lead.body.sessions.map((s: Body) => [s.sessionId, s.calledBy, s.childCount]),
    [['ses_gw_lead', null, 2]],
  );
  const bad = await call(open, 'GET', '/v1/sessions?called_by=no%20such');
  assert.equal([bad.status, bad.body.error.code], [400, 'invalid_query']);
  assert.match(bad.body.error.message, 'calledBy must be a session id');
});

test('CORS: an allowed origin gets its preflight and headers; another is refused; bodies are limited and checked', async () => {
  const pre = await fetch(new URL('/v1/sessions/ses_web_1/inputs', guarded.url), {
    method: 'OPTIONS',
    headers: { origin: 'http://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
  });
  assert.is(pre.status, 204);
  assert.is(pre.headers.get('access-control-allow-origin'), 'http://app.example');
  assert.match(pre.headers.get('access-control-allow-headers') ?? '', 'authorization');
  const refused = await fetch(new URL('/v1/sessions/ses_web_1/inputs', guarded.url), { method: 'OPTIONS', headers: { origin: 'http://evil.example' } });
  assert.is(refused.status, 403);
  const simple = await call(guarded, 'GET', '/v1/sessions/ses_web_1', undefined, { ...as(WEB), origin: 'http://app.example' });
  assert.is(simple.headers.get('access-control-allow-origin'), 'http://app.example');
  assert.is((await call(open, 'GET', '/v1/health', undefined, { origin: 'http://app.example' })).headers.get('access-control-allow-origin'), null);

  const big = await call(guarded, 'POST', '/v1/sessions/ses_web_2/inputs', { prompt: 'x'.repeat(4000) }, as(WEB));
  assert.equal([big.status, big.body.error.code], [413, 'payload_too_large']);
  assert.match(big.body.error.message, '2048 bytes');
  const notJson = await call(guarded, 'POST', '/v1/sessions/ses_web_2/inputs', '{"prompt": ', as(WEB));
  assert.equal([notJson.status, notJson.body.error.code], [400, 'invalid_payload']);
  const badPrompt = await call(guarded, 'POST', '/v1/sessions/ses_web_2/inputs', { prompt: 42 }, as(WEB));
  assert.equal([badPrompt.status, badPrompt.body.error.code], [400, 'invalid_option']);
  const badId = await call(guarded, 'GET', '/v1/sessions/bad%20id', undefined, as(WEB));
  assert.equal([badId.status, badId.body.error.code], [400, 'invalid_id']);
  const inside = await call(open, 'POST', '/v1/sessions/ses_g1/fork', { sessionId: 'ses_g1_mid', at: 2 });
  assert.equal([inside.status, inside.body.error.code], [409, 'not_settled']);
  assert.equal((await call(open, 'GET', '/v1/nothing')).status, 404);
  assert.equal((await call(open, 'GET', '/v1/sessions/ses_g1/wake')).status, 405);
});

test('a slow client: deltas are dropped and its stream ends saying where to resume; the turn never waits for it', async () => {
  const slow = await startGateway({ sessions: sessiond, live: engineLive(sessiond), port: 0, maxBufferedBytes: 1024 });
  try {
    // a client that never reads: its socket fills, the gateway's buffer with it
    const req = request(new URL('/v1/sessions/ses_slow/events', slow.url));
    const got = new Promise<import('node:http').IncomingMessage>((resolve) => req.on('response', resolve));
    req.end();
    const res = await got;
    res.pause();
    const long = 'word '.repeat(30_000);
    await sessiond.admit('ses_slow', { prompt: long });
    await sessiond.awaitIdle('ses_slow');
    assert.is((await sessiond.status('ses_slow')).state, 'settled', 'the turn finished with the client stalled');
    res.resume();
    let text = '';
    for await (const chunk of res) text += chunk;
    assert.match(text, 'event: lagging');
    assert.match(text, /"resumeAfterSeq":\d+/);
  } finally {
    await slow.close();
  }
});

test('a worker stopping mid-answer: the stream says the turn was interrupted, and what of it was recorded', async () => {
  const db = tmp.file('handback.db');
  const worker = await startSessiond({ db, runner: echoRunner({ steps: 3, delayMs: 400 }) });
  const gw = await startGateway({ sessions: worker, live: engineLive(worker), port: 0 });
  try {
    const stream = await readSse(new URL('/v1/sessions/ses_hb/events', gw.url).href);
    await call(gw, 'POST', '/v1/sessions/ses_hb/inputs', { prompt: 'a b c d e f' });
    await stream.next((f) => f.json?.type === 'text.delta');
    await worker.close(); // hands the turn back
    const interrupted = await stream.next((f) => f.json?.type === 'turn.interrupted');
    const p = interrupted.json!.payload as { reason: string; recorded: unknown[]; continuationInputId: string | null };
    assert.is(p.reason, 'handed_back');
    assert.ok(Array.isArray(p.recorded));
    assert.is(interrupted.id, undefined, 'a live-only event: no id');
    stream.close();
  } finally {
    await gw.close();
    await worker.close();
  }
});

test('no tokens off loopback is refused, saying how', async () => {
  try {
    await startGateway({ sessions: sessiond, port: 0, host: '0.0.0.0' });
    assert.unreachable('it started');
  } catch (err) {
    assert.match((err as Error).message, 'without tokens');
  }
  assert.throws(() => parseTokens('{"tokens":[{"name":"x","token":"short","sessions":"*"}]}', 'env'), /shorter than 16/);
  assert.throws(() => parseTokens('{"tokens":[{"name":"x","token":"0123456789abcdefg"}]}', 'env'), /needs "sessions"/);
});

test.run();
