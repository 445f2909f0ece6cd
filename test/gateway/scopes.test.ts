/**
 * Scopes on every gateway route, over real HTTP in front of the embedded worker: each role (read
 * only, prompt, approve, manage, everything, and a token file entry without scopes) against every
 * route; a route a token's scopes do not cover is 403 naming the scope and the token, before
 * anything about the session is told. The approve, deny and resolve routes are called for real on
 * turns that wait, with and without the approve scope.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pathToFileURL } from 'node:url';
import { startSessiond, type Sessiond } from '../../src/host.ts';
import { startGateway, type Gateway } from '../../src/gateway/server.ts';
import { engineLive } from '../../src/gateway/live.ts';
import { parseTokens } from '../../src/gateway/tokens.ts';
import type { Scope } from '../../src/gateway/scopes.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import type { Runner } from '../../src/runner/types.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { writeRunner } from '../support/wait-runner.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
let sessiond: Sessiond;
let gw: Gateway;

const ROLES: Record<string, Scope[] | undefined> = {
  reader: ['read'],
  prompter: ['read', 'prompt'],
  approver: ['read', 'approve'],
  manager: ['read', 'prompt', 'manage'],
  admin: ['read', 'prompt', 'approve', 'manage', 'admin'],
  plain: undefined, // no "scopes": the default
};
const secret = (role: string) => `${role}-token-0123456789abcdef`;

test.before(async () => {
  const file = tmp.file('runner.mjs');
  writeRunner(file, tmp.file('effects.txt'));
  const runner = (await import(pathToFileURL(file).href)).default as Runner;
  sessiond = await startSessiond({ db: tmp.file('scopes.db'), runner });
  gw = await startGateway({
    sessions: sessiond,
    live: engineLive(sessiond),
    port: 0,
    tokens: parseTokens(
      JSON.stringify({
        tokens: Object.entries(ROLES).map(([name, scopes]) => ({ name, token: secret(name), sessions: '*', ...(scopes ? { scopes } : {}) })),
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

// biome-ignore lint/suspicious/noExplicitAny: JSON replies read loosely in assertions
type Body = Record<string, any>;

async function call(role: string, method: string, path: string, body?: unknown) {
  const res = await fetch(new URL(path, gw.url), {
    method,
    headers: { authorization: `Bearer ${secret(role)}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const streamed = (res.headers.get('content-type') ?? '').startsWith('text/event-stream');
  if (streamed) await res.body?.cancel();
  const text = streamed ? '' : await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as Body };
}

async function eventsOf(id: string): Promise<SessionEvent[]> {
  const seq = (await sessiond.status(id)).seq;
  const seen: SessionEvent[] = [];
  const sub = await sessiond.follow(id, (e) => {
    seen.push(e);
  });
  await waitFor(() => seen.length >= seq, { what: `the events of ${id}` });
  await sub.close();
  return seen;
}

async function waiting(id: string, prompt: string) {
  await sessiond.admit(id, { prompt });
  await waitFor(async () => (await sessiond.status(id)).waits.some((w) => w.outcome === null), { what: `${id} to wait` });
}

/** Every route, the scope it needs, and a request to it. */
const ROUTES: [Scope, string, string, unknown?][] = [
  ['read', 'GET', '/v1/sessions'],
  ['read', 'GET', '/v1/sessions/ses_sc'],
  ['read', 'GET', '/v1/sessions/ses_sc/events'],
  ['read', 'GET', '/v1/chat/ses_sc/stream'],
  ['prompt', 'POST', '/v1/sessions/ses_sc/inputs', { prompt: 'hello', wake: false }],
  ['prompt', 'POST', '/v1/sessions/ses_sc/wake'],
  ['prompt', 'POST', '/v1/chat', { id: 'ses_sc_chat', messages: [{ id: 'msg_1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }] }],
  ['manage', 'POST', '/v1/sessions/ses_sc/cancel', {}],
  ['manage', 'POST', '/v1/sessions/ses_sc/tags', { tags: { team: 'a' } }],
  ['admin', 'POST', '/v1/sessions/ses_sc/budget', { tokens: 1_000_000 }],
  ['manage', 'POST', '/v1/sessions/ses_sc/pending/drop', {}],
  ['manage', 'POST', '/v1/sessions/ses_sc/fork', { sessionId: 'ses_sc_fork' }],
  ['approve', 'POST', '/v1/sessions/ses_sc/calls/call_none/approve', {}],
  ['approve', 'POST', '/v1/sessions/ses_sc/calls/call_none/deny', {}],
  ['approve', 'POST', '/v1/sessions/ses_sc/waits/answer', { data: 1 }],
];

test('each role against every route: 403 naming the scope and the token where its scopes do not cover it, served where they do', async () => {
  await sessiond.admit('ses_sc', { prompt: 'hello' });
  await sessiond.awaitIdle('ses_sc');
  for (const [role, scopes] of Object.entries(ROLES)) {
    const has = new Set(scopes ?? ['read', 'prompt', 'manage']);
    for (const [scope, method, path, body] of ROUTES) {
      const r = await call(role, method, path, body);
      const what = `${role} ${method} ${path}`;
      if (has.has(scope)) assert.ok(r.status !== 403 && r.status !== 401, `${what}: ${r.status} ${JSON.stringify(r.body)}`);
      else {
        assert.equal([r.status, r.body?.error?.code], [403, 'permission_denied'], `${what}: ${JSON.stringify(r.body)}`);
        assert.match(r.body.error.message, `Token ${role} lacks scope ${scope}`, what);
      }
    }
  }
  assert.equal((await call('reader', 'GET', '/v1/health')).status, 200, 'health needs no scope');
});

test('budget: an admin token sets a session budget (a manage token may not: a tenant would raise its own), recorded with its name as the actor; a bad limit is 400 saying what to give', async () => {
  await sessiond.admit('ses_bud', { prompt: 'hello' });
  await sessiond.awaitIdle('ses_bud');
  const refused = await call('manager', 'POST', '/v1/sessions/ses_bud/budget', { tokens: 500 });
  assert.equal([refused.status, refused.body.error.code], [403, 'permission_denied']);
  const set = await call('admin', 'POST', '/v1/sessions/ses_bud/budget', { tokens: 500, reset: true });
  assert.is(set.status, 200, JSON.stringify(set.body));
  assert.equal(set.body.budget, { tokens: 500, costUsd: null, spent: { tokens: 0, costUsd: 0 } });
  const recorded = (await eventsOf('ses_bud')).find((e) => e.type === 'budget.set');
  assert.equal(recorded?.payload, { tokens: 500, costUsd: null, reset: true, actor: 'admin' });
  const bad = await call('admin', 'POST', '/v1/sessions/ses_bud/budget', { tokens: -1 });
  assert.equal([bad.status, bad.body.error.code], [400, 'invalid_option']);
  assert.match(bad.body.error.message, 'tokens must be a whole number >= 0');
  assert.is((await call('reader', 'GET', '/v1/sessions/ses_bud')).body.budget.tokens, 500, 'status shows it');
});

test('a scope refusal tells nothing of the session: the same 403 for an id that does not exist', async () => {
  const real = await call('reader', 'POST', '/v1/sessions/ses_sc/calls/call_x/approve', {});
  const none = await call('reader', 'POST', '/v1/sessions/ses_nothing_here/calls/call_x/approve', {});
  assert.equal([real.status, real.body.error.message.replace('ses_sc', 'X')], [none.status, none.body.error.message.replace('ses_nothing_here', 'X')]);
});

test('approve and deny a waiting tool call, resolve a waited signal: refused without the approve scope, done with it', async () => {
  await waiting('ses_ap1', 'deploy');
  await waiting('ses_ap2', 'deploy');
  await waiting('ses_ap3', 'ask');
  for (const role of ['plain', 'manager', 'prompter']) {
    assert.is((await call(role, 'POST', '/v1/sessions/ses_ap1/calls/call_ses_ap1/approve', { reason: 'ship it' })).status, 403, role);
    assert.is((await call(role, 'POST', '/v1/sessions/ses_ap2/calls/call_ses_ap2/deny', {})).status, 403, role);
    assert.is((await call(role, 'POST', '/v1/sessions/ses_ap3/waits/answer', { data: 42 })).status, 403, role);
  }
  assert.ok(
    (await sessiond.status('ses_ap1')).waits.every((w) => w.outcome === null),
    'nothing was decided by them',
  );

  const approved = await call('approver', 'POST', '/v1/sessions/ses_ap1/calls/call_ses_ap1/approve', { reason: 'ship it' });
  assert.equal([approved.status, approved.body.outcome, approved.body.resolved], [200, 'approved', true], JSON.stringify(approved.body));
  const denied = await call('approver', 'POST', '/v1/sessions/ses_ap2/calls/call_ses_ap2/deny', { reason: 'not today' });
  assert.equal([denied.status, denied.body.outcome], [200, 'denied']);
  const resolved = await call('admin', 'POST', '/v1/sessions/ses_ap3/waits/answer', { data: 42 });
  assert.equal([resolved.status, resolved.body.outcome], [200, 'delivered']);
  for (const id of ['ses_ap1', 'ses_ap2', 'ses_ap3']) await sessiond.awaitIdle(id);
  const said = async (id: string) => JSON.stringify((await eventsOf(id)).filter((e) => e.type === 'wait.resolved'));
  assert.match(await said('ses_ap1'), '"approved"');
  assert.match(await said('ses_ap2'), '"denied"');
  assert.match(await said('ses_ap3'), '"delivered"');
  const actors = async (id: string) => (await eventsOf(id)).filter((e) => e.type === 'wait.resolved').map((e) => (e.payload as { actor?: string }).actor);
  assert.equal(await actors('ses_ap1'), ['approver'], 'who approved is in the event');
  assert.equal(await actors('ses_ap2'), ['approver']);
  assert.equal(await actors('ses_ap3'), ['admin']);
});

test('who did it: a cancel and a drop record the token that did them', async () => {
  await sessiond.admit('ses_who', { prompt: 'later', wake: false });
  const dropped = await call('manager', 'POST', '/v1/sessions/ses_who/pending/drop', { reason: 'stale', actor: 'someone-else' });
  assert.equal([dropped.status, dropped.body.dropped.length], [200, 1]);
  const drop = (await eventsOf('ses_who')).find((e) => e.type === 'input.dropped')!;
  assert.equal(drop.payload, { inputIds: dropped.body.dropped, reason: 'stale', actor: 'manager' }, 'the token, not what the body claims');
});

test('cancel needs manage: a prompt-only token may not cancel a turn (the choice documented in docs/gateway.md)', async () => {
  await waiting('ses_cx', 'ask');
  const refused = await call('prompter', 'POST', '/v1/sessions/ses_cx/cancel', {});
  assert.equal([refused.status, refused.body.error.code], [403, 'permission_denied']);
  const done = await call('manager', 'POST', '/v1/sessions/ses_cx/cancel', { reason: 'enough' });
  assert.equal([done.status, done.body.cancelled], [200, true], JSON.stringify(done.body));
  const sealed = (await eventsOf('ses_cx')).filter((e) => e.type === 'wait.resolved');
  assert.equal(
    sealed.map((e) => [(e.payload as { outcome: string }).outcome, (e.payload as { actor?: string }).actor]),
    [['cancelled', 'manager']],
  );
  assert.is((await sessiond.status('ses_cx')).execution?.cancelledBy, 'manager', 'status says who cancelled');
});

test.run();
