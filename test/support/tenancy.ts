/**
 * The tenancy findings as scenarios over real HTTP, run against both transports (the embedded
 * gateway, test/gateway/tenancy.test.ts; `sessiond serve --nats`, test/gateway/tenancy-nats.test.ts):
 * a tag token claiming an id inside a prefix token's namespace, two tenants racing to create the
 * same ids, and forks keeping their owner.
 */
import * as assert from 'uvu/assert';
import { readSse } from './sse.ts';

export const WEB = 'web-token-0123456789abcdef';
export const ACME = 'acme-token-0123456789abcdef';
export const TA = 'tenant-a-token-0123456789abcdef';
export const TB = 'tenant-b-token-0123456789abcdef';
export const OPS = 'ops-token-0123456789abcdef';

/** The tokens file of the scenarios: a prefix token, a tag token, and two tenants sharing a prefix. */
export const TENANCY_TOKENS = {
  tokens: [
    { name: 'web', token: WEB, sessions: 'ses_web_', scopes: ['read', 'prompt', 'approve', 'manage'] },
    { name: 'acme', token: ACME, tag: 'tenant=acme', scopes: ['read', 'prompt', 'approve', 'manage'] },
    { name: 'ta', token: TA, tenant: 'ta', sessions: 'ses_r_' },
    { name: 'tb', token: TB, tenant: 'tb', sessions: 'ses_r_' },
    { name: 'ops', token: OPS, tenant: '*', sessions: '*' },
  ],
};

/** Resolves once the session has run what it was given (its state settled, nothing pending), as the ops token sees it. */
export async function settledBy(base: string, id: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await client(base).status(OPS, id);
    if (s.status === 200 && s.body.state === 'settled' && s.body.pendingCount === 0) return;
    if (Date.now() > deadline) throw new Error(`session ${id} did not settle in ${timeoutMs} ms: ${JSON.stringify(s.body)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// biome-ignore lint/suspicious/noExplicitAny: JSON replies read loosely in assertions
type Body = Record<string, any>;

export function client(base: string) {
  const call = async (method: 'GET' | 'POST', path: string, token: string, body?: unknown): Promise<{ status: number; body: Body }> => {
    const res = await fetch(new URL(path, base), {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as Body };
  };
  return {
    call,
    admit: (token: string, id: string, prompt: string) => call('POST', `/v1/sessions/${id}/inputs`, token, { prompt }),
    status: (token: string, id: string) => call('GET', `/v1/sessions/${id}`, token),
    /** The whole committed log of a session as `token` reads it, up to `until` (a type), or the status of a refused stream. */
    async events(token: string, id: string, until: string, timeoutMs = 30_000) {
      const stream = await readSse(new URL(`/v1/sessions/${id}/events?access_token=${token}`, base).href);
      if (stream.status !== 200) {
        stream.close();
        return { status: stream.status, text: '' };
      }
      await stream.next((f) => f.json?.type === until, timeoutMs);
      stream.close();
      return { status: 200, text: stream.frames.map((f) => f.data).join('\n') };
    },
  };
}

/** The same words for an id out of reach as for one that does not exist. */
export function assertNotFound(r: { status: number; body: Body }, id: string, what: string): void {
  assert.equal([r.status, r.body?.error?.code], [404, 'not_found'], `${what}: ${JSON.stringify(r.body)}`);
  assert.is(r.body.error.message.replaceAll(id, 'X'), 'Session X has no events, or this token may not reach it.', what);
}

/**
 * The High finding: a tag token claims `ses_web_victim` inside the web token's prefix; the web
 * app's user then types a secret there, and the tag token reads it, or decides its calls.
 */
export async function tagTokenClaimsPrefixId(base: string): Promise<void> {
  const c = client(base);
  const claimed = await c.admit(ACME, 'ses_web_victim', 'mine now');
  assert.is(claimed.status, 200, JSON.stringify(claimed.body));
  await settledBy(base, 'ses_web_victim');
  assertNotFound(await c.admit(WEB, 'ses_web_victim', 'my password is hunter2'), 'ses_web_victim', 'the web token may not type into it');
  assertNotFound(await c.status(WEB, 'ses_web_victim'), 'ses_web_victim', 'nor read its status');
  assertNotFound(await c.call('POST', '/v1/sessions/ses_web_victim/calls/call_1/deny', WEB, {}), 'ses_web_victim', 'nor deny a call there');
  const read = await c.events(ACME, 'ses_web_victim', 'execution.settled');
  assert.is(read.status, 200);
  assert.not.match(read.text, 'hunter2', 'the tag token never reads what the web user typed');
  const owned = await c.status(ACME, 'ses_web_victim');
  assert.equal([owned.status, owned.body.ownedBy], [200, 'token:acme']);

  // the other way round: the web token's session, tagged as acme's by its user, stays the web token's
  const made = await c.call('POST', '/v1/sessions/ses_web_mine/inputs', WEB, { prompt: 'the secret is swordfish', tags: { tenant: 'acme' } });
  assert.is(made.status, 200, JSON.stringify(made.body));
  await settledBy(base, 'ses_web_mine');
  assertNotFound(await c.status(ACME, 'ses_web_mine'), 'ses_web_mine', 'a matching tag is not ownership');
  assertNotFound(await c.admit(ACME, 'ses_web_mine', 'let me in'), 'ses_web_mine', 'nor may it type there');
  const stream = await c.events(ACME, 'ses_web_mine', 'x');
  assert.is(stream.status, 404, 'nor read its events');
  const listed = await c.call('GET', '/v1/sessions', ACME);
  assert.equal(
    listed.body.sessions.map((s: Body) => s.sessionId),
    ['ses_web_victim'],
    'the tag token lists what it owns',
  );
  // admitting tells a token nothing: an id outside its prefix answers as a taken id does
  const outside = await c.admit(WEB, 'ses_elsewhere', 'hi');
  assertNotFound(outside, 'ses_elsewhere', 'outside the prefix');
}

/**
 * Two tenants race to create the same ids, each with its own secret: each id admits exactly one,
 * the loser gets the 404 of an id that does not exist, and reads nothing of the winner's.
 */
export async function tenantsRace(base: string, ids: number): Promise<void> {
  const c = client(base);
  const names = Array.from({ length: ids }, (_, i) => `ses_r_race${i}`);
  const results = await Promise.all(
    names.map(async (id) => {
      const [a, b] = await Promise.all([c.admit(TA, id, `secret-of-ta-${id}`), c.admit(TB, id, `secret-of-tb-${id}`)]);
      return { id, a, b };
    }),
  );
  for (const { id, a, b } of results) {
    assert.ok(
      [a.status, b.status].sort().join() === '200,404',
      `${id}: exactly one tenant creates it (got ${a.status} ${JSON.stringify(a.body)} and ${b.status} ${JSON.stringify(b.body)})`,
    );
    const [, loser] = a.status === 200 ? ['ta', 'tb'] : ['tb', 'ta'];
    assertNotFound(a.status === 200 ? b : a, id, `${id}: the loser's admission`);
    const winnerToken = a.status === 200 ? TA : TB;
    const loserToken = a.status === 200 ? TB : TA;
    await settledBy(base, id);
    assertNotFound(await c.status(loserToken, id), id, `${id}: the loser's status`);
    const mine = await c.status(winnerToken, id);
    assert.equal([mine.status, mine.body.ownedBy], [200, a.status === 200 ? 'ta' : 'tb']);
    const log = await c.events(winnerToken, id, 'execution.settled');
    assert.not.match(log.text, `secret-of-${loser}`, `${id}: the loser's prompt never got in`);
  }
  for (const [token, owner] of [
    [TA, 'ta'],
    [TB, 'tb'],
  ] as const) {
    const listed = await c.call('GET', '/v1/sessions?prefix=ses_r_race&limit=1000', token);
    const won = results.filter((r) => (owner === 'ta' ? r.a : r.b).status === 200).map((r) => r.id);
    assert.equal(listed.body.sessions.map((s: Body) => s.sessionId).sort(), won.sort(), `${owner} lists the ids it won, only`);
    assert.ok(
      listed.body.sessions.every((s: Body) => s.ownedBy === owner),
      'each row names its owner',
    );
  }
}

/** A fork through the gateway keeps the source's owner; the other tenant reaches neither. */
export async function forkKeepsOwner(base: string): Promise<void> {
  const c = client(base);
  assert.is((await c.admit(TA, 'ses_r_src', 'a conversation of ta')).status, 200);
  await settledBy(base, 'ses_r_src');
  assertNotFound(await c.call('POST', '/v1/sessions/ses_r_src/fork', TB, { sessionId: 'ses_r_tb_fork' }), 'ses_r_src', 'tb may not fork it');
  const fork = await c.call('POST', '/v1/sessions/ses_r_src/fork', TA, { sessionId: 'ses_r_fork' });
  assert.is(fork.status, 200, JSON.stringify(fork.body));
  assert.is((await c.status(TA, 'ses_r_fork')).body.ownedBy, 'ta');
  assertNotFound(await c.status(TB, 'ses_r_fork'), 'ses_r_fork', 'the fork is ta’s too');
  // a fork into an id another tenant holds answers as that id out of reach
  assert.is((await c.admit(TB, 'ses_r_tb_own', 'tb here')).status, 200);
  assertNotFound(await c.call('POST', '/v1/sessions/ses_r_src/fork', TA, { sessionId: 'ses_r_tb_own' }), 'ses_r_tb_own', 'a fork target tb holds');
}
