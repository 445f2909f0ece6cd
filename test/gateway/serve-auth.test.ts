/**
 * `sessiond serve` as a real process with a tokens file and a JWKS file: a token removed from the
 * file stops working within seconds and a new one starts; a file that stops parsing keeps the
 * tokens it had and says why; a signed token from the JWKS is accepted; bad --jwks input is
 * refused before anything serves. On a real worker, the approve, deny and resolve routes refuse a
 * token without approve and record the reviewer who has it; a cancel records its token, shown by
 * sessiond status.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { runCli, startCli, type LongRunning } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { writeRunner } from '../support/wait-runner.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';

const tmp = tempDir();
const A = 'token-a-0123456789abcdef';
const B = 'token-b-0123456789abcdef';
let serve: LongRunning | undefined;

test.after(() => {
  serve?.child.kill('SIGTERM');
  tmp.remove();
});

const tokens = (...entries: [string, string][]) => JSON.stringify({ tokens: entries.map(([name, token]) => ({ name, token, sessions: '*' })) });

test('serve: a removed token stops working within seconds, a broken file keeps the old table, a JWT from the JWKS file works', async () => {
  const file = tmp.file('tokens.json');
  writeFileSync(file, tokens(['a', A], ['b', B]));
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwks = tmp.file('jwks.json');
  writeFileSync(jwks, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }] }));
  serve = startCli(['serve', '--http', '0', '--db', tmp.file('serve.db'), '--tokens', file, '--jwks', jwks, '--jwt-audience', 'sessiond']);
  await serve.waitFor(/gateway: (http:\/\/\S+?)v1\/sessions/);
  const url = /gateway: (http:\/\/\S+?)v1\/sessions/.exec(serve.output())![1]!;
  assert.match(serve.output(), `signed tokens verified against ${jwks}`);
  const status = async (token: string) => (await fetch(`${url}v1/sessions`, { headers: { authorization: `Bearer ${token}` } })).status;
  assert.equal([await status(A), await status(B)], [200, 200]);

  writeFileSync(file, tokens(['b', B]));
  await waitFor(async () => (await status(A)) === 401, { timeoutMs: 10_000, what: 'the removed token to stop working' });
  assert.is(await status(B), 200);

  writeFileSync(file, '{"tokens": [');
  await serve.waitFor('keeps the 1 tokens it had', 10_000);
  assert.is(await status(B), 200, 'the table read before still holds');

  writeFileSync(file, tokens(['a', A]));
  await waitFor(async () => (await status(A)) === 200, { timeoutMs: 10_000, what: 'the token added back to work' });
  assert.is(await status(B), 401);

  const jwt = await new SignJWT({ sub: 'carol', scope: 'read', sessiond_sessions: '*' })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setAudience('sessiond')
    .setExpirationTime('5m')
    .sign(privateKey);
  assert.is(await status(jwt), 200);
});

test('serve: a cancel through the gateway records the token as the actor, and sessiond status says who cancelled', async () => {
  const file = tmp.file('ops-tokens.json');
  writeFileSync(file, JSON.stringify({ tokens: [{ name: 'ops-desk', token: A, sessions: '*', scopes: ['read', 'prompt', 'manage'] }] }));
  const db = tmp.file('cancel.db');
  const g = startCli(['serve', '--http', '0', '--db', db, '--tokens', file, '--echo-delay-ms', '60000']);
  try {
    await g.waitFor(/gateway: (http:\/\/\S+?)v1\/sessions/);
    const url = /gateway: (http:\/\/\S+?)v1\/sessions/.exec(g.output())![1]!;
    const post = (path: string, body: unknown) =>
      fetch(url + path, { method: 'POST', headers: { authorization: `Bearer ${A}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    assert.is((await post('v1/sessions/ses_long/inputs', { prompt: 'a long turn' })).status, 200);
    await waitFor(
      async () => {
        const r = await fetch(`${url}v1/sessions/ses_long`, { headers: { authorization: `Bearer ${A}` } });
        return ((await r.json()) as { state: string }).state === 'running';
      },
      { timeoutMs: 20_000, what: 'the turn to run' },
    );
    const cancelled = await post('v1/sessions/ses_long/cancel', { reason: 'too long' });
    assert.is(cancelled.status, 200, await cancelled.clone().text());
    const status = await runCli(['status', 'ses_long', '--db', db]);
    assert.match(status.stdout, /turn exe_\S+ cancelled by ops-desk/);
  } finally {
    g.child.kill('SIGTERM');
    await g.exited;
  }
});

test('serve: the approve, deny and resolve routes on a real worker, as a token with and without approve', async () => {
  const runner = tmp.file('wait-runner.mjs');
  writeRunner(runner, tmp.file('effects.txt'));
  const file = tmp.file('role-tokens.json');
  writeFileSync(
    file,
    JSON.stringify({
      tokens: [
        // one tenant: the reviewer reaches the sessions the end user's token started
        { name: 'end-user', token: A, sessions: '*', tenant: 'shop' },
        { name: 'reviewer', token: B, sessions: '*', tenant: 'shop', scopes: ['read', 'approve'] },
      ],
    }),
  );
  const db = tmp.file('roles.db');
  const g = startCli(['serve', '--http', '0', '--db', db, '--tokens', file, '--runner', runner]);
  try {
    await g.waitFor(/gateway: (http:\/\/\S+?)v1\/sessions/);
    const url = /gateway: (http:\/\/\S+?)v1\/sessions/.exec(g.output())![1]!;
    const post = (token: string, path: string, body: unknown = {}) =>
      fetch(url + path, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const waiting = async (id: string) =>
      waitFor(
        async () => {
          const r = await fetch(`${url}v1/sessions/${id}`, { headers: { authorization: `Bearer ${B}` } });
          return ((await r.json()) as { waits?: { outcome: string | null }[] }).waits?.some((w) => w.outcome === null) === true;
        },
        { timeoutMs: 20_000, what: `${id} to wait` },
      );
    for (const [id, prompt] of [
      ['ses_rv1', 'deploy'],
      ['ses_rv2', 'deploy'],
      ['ses_rv3', 'ask'],
    ]) {
      assert.is((await post(A, `v1/sessions/${id}/inputs`, { prompt })).status, 200);
      await waiting(id!);
    }
    const routes = ['v1/sessions/ses_rv1/calls/call_ses_rv1/approve', 'v1/sessions/ses_rv2/calls/call_ses_rv2/deny', 'v1/sessions/ses_rv3/waits/answer'];
    for (const path of routes) {
      const refused = await post(A, path, { reason: 'mine', data: 1 });
      assert.is(refused.status, 403, path);
      assert.match(await refused.text(), 'Token end-user lacks scope approve');
    }
    for (const path of routes) {
      const done = await post(B, path, path.includes('waits') ? { data: 42 } : { reason: 'checked' });
      assert.is(done.status, 200, `${path}: ${await done.clone().text()}`);
    }
    const d = openDatabase(db, { readonly: true });
    try {
      const log = new SqliteEventLog(d);
      for (const id of ['ses_rv1', 'ses_rv2', 'ses_rv3']) {
        const resolved = (await log.readSession(id)).filter((e) => e.type === 'wait.resolved');
        assert.equal(
          resolved.map((e) => (e.payload as { actor?: string }).actor),
          ['reviewer'],
          `${id}: who decided is in the log`,
        );
      }
    } finally {
      d.close();
    }
  } finally {
    g.child.kill('SIGTERM');
    await g.exited;
  }
});

test('serve: a --jwks that does not parse, or JWT flags without --jwks, are refused before it serves', async () => {
  const bad = tmp.file('bad-jwks.json');
  writeFileSync(bad, '{"keys": "no"}');
  const r = await runCli(['serve', '--http', '0', '--db', tmp.file('bad.db'), '--jwks', bad]);
  assert.is.not(r.code, 0);
  assert.match(r.stderr, `Invalid JWKS ${bad}: it needs a non-empty "keys" list`);
  const stray = await runCli(['serve', '--http', '0', '--db', tmp.file('bad.db'), '--jwt-issuer', 'x']);
  assert.is.not(stray.code, 0);
  assert.match(stray.stderr, 'need --jwks');
});

test.run();
