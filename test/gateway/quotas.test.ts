/**
 * Quotas per token and per tenant: the counters on a fake clock (quotas.ts), the token file's
 * `"limits"`, and the gateway in front of the embedded worker refusing past each quota with 429
 * `limit_exceeded` naming the quota, its value and what to do: admissions per minute, sessions per
 * hour (a tenant's over all its tokens), forks and the bytes they copy, pending bytes, streams.
 */
import { systemClock } from '../../src/clock.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startSessiond, type Sessiond } from '../../src/host.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { startGateway, type Gateway } from '../../src/gateway/server.ts';
import { engineLive } from '../../src/gateway/live.ts';
import { parseTokens } from '../../src/gateway/tokens.ts';
import { DEFAULT_TOKEN_QUOTAS, QuotaBook, parseQuotas, quotaKeys, type QuotaKey } from '../../src/gateway/quotas.ts';
import { ErrorCode } from '../../src/errors.ts';
import { expectCode } from '../../src/testing/fixtures.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
const key = (id: string, limits: Partial<typeof DEFAULT_TOKEN_QUOTAS>): QuotaKey => ({
  id,
  label: id.replace(':', ' '),
  limits: { ...DEFAULT_TOKEN_QUOTAS, ...limits },
});

test('quota book - a rolling window: refused at the limit with the quota, its value and when there is room; free again once it passes', () => {
  let now = 1_000_000;
  const book = new QuotaBook({ now: () => now });
  const k = [key('token:web', { admissionsPerMinute: 2 })];
  book.check(k, 'admissionsPerMinute');
  book.record(k, 'admissionsPerMinute');
  now += 10_000;
  book.record(k, 'admissionsPerMinute');
  const err = expectCode(() => book.check(k, 'admissionsPerMinute'), ErrorCode.LimitExceeded, 'token web is at its limit admissionsPerMinute = 2 (2 used)');
  assert.match(err.message, 'Send fewer prompts');
  assert.match(err.message, '"limits": {"admissionsPerMinute": N}');
  assert.is(err.details.retryAfterMs, 50_000, 'room again when the oldest leaves the window');
  now += 50_001;
  book.check(k, 'admissionsPerMinute');
  // a use given back (the action failed) counts nothing
  const undo = book.record(k, 'admissionsPerMinute');
  expectCode(() => book.check(k, 'admissionsPerMinute'), ErrorCode.LimitExceeded);
  undo();
  book.check(k, 'admissionsPerMinute');
});

test('quota book - streams: a cap taken under every key or none, given back once; a tenant counts over its tokens', () => {
  const book = new QuotaBook({ now: () => 0 });
  const defaults = { token: { ...DEFAULT_TOKEN_QUOTAS, streams: 2 }, tenant: { ...DEFAULT_TOKEN_QUOTAS, streams: 3 } };
  const a = quotaKeys({ name: 'a', tenant: 'acme' }, defaults);
  const b = quotaKeys({ name: 'b', tenant: 'acme', limits: { streams: 10 } }, defaults);
  assert.equal(
    a.map((k) => k.id),
    ['token:a', 'tenant:acme'],
  );
  assert.equal(quotaKeys({ name: 'ops', tenant: '*' }, defaults).length, 1, 'every tenant: no tenant key');
  const r1 = book.openStream(a);
  book.openStream(a);
  expectCode(() => book.openStream(a), ErrorCode.LimitExceeded, 'token a is at its limit streams = 2');
  book.openStream(b);
  const err = expectCode(() => book.openStream(b), ErrorCode.LimitExceeded, 'tenant acme is at its limit streams = 3');
  assert.match(err.message, '--tenant-limit streams=N');
  assert.is(book.streams('token:b'), 1, 'a refusal takes nothing');
  r1();
  r1();
  assert.is(book.streams('tenant:acme'), 2, 'given back once');
  book.openStream(b);
});

test('quota book - pending bytes: counted per session, corrected down from status, never up', () => {
  const book = new QuotaBook({ now: () => 0 });
  const k = [key('token:web', { pendingBytes: 100 })];
  book.addPending(k, 'ses_1', 60);
  book.addPending(k, 'ses_2', 30);
  assert.is(book.overPending(k, 20)?.id, 'token:web');
  book.setPending(k, 'ses_1', 0);
  book.setPending(k, 'ses_2', 500);
  assert.equal(book.pending('token:web'), { total: 30, sessions: ['ses_2'] });
  assert.is(book.overPending(k, 20), undefined);
});

test('limits in the token file: known names, whole numbers >= 0, else refused saying what', () => {
  assert.equal(parseQuotas({ streams: 0, pendingBytes: 10 }, 'x'), { streams: 0, pendingBytes: 10 });
  const file = (limits: unknown) => JSON.stringify({ tokens: [{ name: 'web', token: 'web-token-0123456789abcdef', sessions: 'ses_', limits }] });
  assert.equal(parseTokens(file({ streams: 5 }), 'f').find('web-token-0123456789abcdef')?.limits, { streams: 5 });
  expectCode(() => parseTokens(file({ stream: 5 }), 'f'), ErrorCode.InvalidOption, 'tokens[0].limits has unknown limit stream (the limits: streams,');
  expectCode(() => parseTokens(file({ streams: -1 }), 'f'), ErrorCode.InvalidOption, 'tokens[0].limits.streams must be a whole number >= 0, got -1');
  expectCode(() => parseTokens(file([1]), 'f'), ErrorCode.InvalidOption, 'tokens[0].limits must be an object');
});

// the gateway in front of the embedded worker
let sessiond: Sessiond;
let gw: Gateway;
let now = 5_000_000;
const T = {
  chat: 'chat-token-0123456789abcdef',
  forker: 'fork-token-0123456789abcdef',
  acme1: 'acme1-token-0123456789abcdef',
  acme2: 'acme2-token-0123456789abcdef',
  slow: 'slow-token-0123456789abcdef',
};

test.before(async () => {
  sessiond = await startSessiond({ db: tmp.file('quotas.db'), runner: echoRunner({ steps: 1 }) });
  gw = await startGateway({
    sessions: sessiond,
    live: engineLive(sessiond),
    port: 0,
    clock: { ...systemClock, now: () => now },
    limits: { tenant: { sessionsPerHour: 3 } },
    tokens: parseTokens(
      JSON.stringify({
        tokens: [
          { name: 'chat', token: T.chat, sessions: 'ses_chat_', limits: { admissionsPerMinute: 3 } },
          { name: 'forker', token: T.forker, sessions: 'ses_fork_', limits: { forksPerHour: 5, forkBytesPerHour: 100_000 } },
          { name: 'acme1', token: T.acme1, sessions: 'ses_acme_', tenant: 'acme' },
          { name: 'acme2', token: T.acme2, sessions: 'ses_acme_', tenant: 'acme' },
          { name: 'slow', token: T.slow, sessions: 'ses_slow_', limits: { pendingBytes: 250_000 } },
        ],
      }),
      'test',
    ),
  });
});

test.after(async () => {
  await gw?.close();
  await sessiond?.close();
  tmp.remove();
});

async function post(token: string, path: string, body: unknown) {
  const res = await fetch(new URL(path, gw.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as { error?: { code: string; message: string } } };
}

test('gateway - admissions per minute: the fourth is 429 limit_exceeded with retry-after; a resend counts nothing; a minute later it gets in', async () => {
  for (let i = 0; i < 3; i++) assert.is((await post(T.chat, '/v1/sessions/ses_chat_1/inputs', { id: `inp_${i}`, prompt: 'hi' })).status, 200);
  assert.is((await post(T.chat, '/v1/sessions/ses_chat_1/inputs', { id: 'inp_0', prompt: 'hi' })).status, 429, 'a resend is checked too');
  const refused = await post(T.chat, '/v1/sessions/ses_chat_1/inputs', { id: 'inp_3', prompt: 'hi' });
  assert.is(refused.status, 429);
  assert.is(refused.body.error?.code, 'limit_exceeded');
  assert.match(refused.body.error!.message, 'token chat is at its limit admissionsPerMinute = 3 (3 used)');
  assert.is(refused.headers.get('retry-after'), '60');
  now += 61_000;
  assert.is((await post(T.chat, '/v1/sessions/ses_chat_1/inputs', { id: 'inp_3', prompt: 'hi' })).status, 200);
  // a malformed admission is refused as before (400, saying what), and uses nothing
  for (const bad of [{}, { prompt: 5 }, { prompt: null }])
    assert.is((await post(T.chat, '/v1/sessions/ses_chat_1/inputs', bad)).status, 400, JSON.stringify(bad));
  assert.is((await post(T.chat, '/v1/sessions/ses_chat_1/inputs', { id: 'inp_4', prompt: 'hi' })).status, 200);
});

test("gateway - a tenant's sessions per hour count over all its tokens; admitting to a session it has is not a new one", async () => {
  assert.is((await post(T.acme1, '/v1/sessions/ses_acme_1/inputs', { prompt: 'a' })).status, 200);
  assert.is((await post(T.acme2, '/v1/sessions/ses_acme_2/inputs', { prompt: 'b' })).status, 200);
  assert.is((await post(T.acme1, '/v1/sessions/ses_acme_3/inputs', { prompt: 'c' })).status, 200);
  const refused = await post(T.acme2, '/v1/sessions/ses_acme_4/inputs', { prompt: 'd' });
  assert.is(refused.status, 429);
  assert.match(refused.body.error!.message, 'tenant acme is at its limit sessionsPerHour = 3');
  assert.is((await post(T.acme2, '/v1/sessions/ses_acme_1/inputs', { prompt: 'again' })).status, 200, 'an existing session takes prompts');
  now += 3_601_000;
  assert.is((await post(T.acme2, '/v1/sessions/ses_acme_4/inputs', { prompt: 'd' })).status, 200);
});

test('gateway - forks: the bytes they copy are counted; past forkBytesPerHour the next fork is refused', async () => {
  assert.is((await post(T.forker, '/v1/sessions/ses_fork_src/inputs', { prompt: 'y'.repeat(60_000) })).status, 200);
  await sessiond.awaitIdle('ses_fork_src');
  assert.is((await post(T.forker, '/v1/sessions/ses_fork_src/fork', { sessionId: 'ses_fork_a' })).status, 200);
  const refused = await post(T.forker, '/v1/sessions/ses_fork_src/fork', { sessionId: 'ses_fork_b' });
  assert.is(refused.status, 429, JSON.stringify(refused.body));
  assert.match(refused.body.error!.message, 'token forker is at its limit forkBytesPerHour = 100000');
  assert.match(refused.body.error!.message, 'Fork at an earlier point');
  assert.is((await sessiond.list({ idPrefix: 'ses_fork_b' })).sessions.length, 0, 'nothing was forked');
});

test('gateway - pending bytes: prompts left pending count until they run', async () => {
  const prompt = 'p'.repeat(100_000);
  assert.is((await post(T.slow, '/v1/sessions/ses_slow_1/inputs', { prompt, wake: false })).status, 200);
  assert.is((await post(T.slow, '/v1/sessions/ses_slow_2/inputs', { prompt, wake: false })).status, 200);
  const refused = await post(T.slow, '/v1/sessions/ses_slow_3/inputs', { prompt, wake: false });
  assert.is(refused.status, 429);
  assert.match(refused.body.error!.message, 'token slow is at its limit pendingBytes = 250000');
  // once one runs, there is room again
  await sessiond.wake('ses_slow_1');
  await sessiond.awaitIdle('ses_slow_1');
  assert.is((await post(T.slow, '/v1/sessions/ses_slow_3/inputs', { prompt, wake: false })).status, 200);
});

test.run();
