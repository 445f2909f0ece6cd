/**
 * The inspector's tokens: `sessiond inspect --host 0.0.0.0` without tokens refuses to start, saying
 * how (a real process); with the gateway's tokens it serves the page to anyone and every /api route
 * only to a token that reaches every session with `read` (fork: `manage`); the worker's inspector
 * (an engine's sessions behind it) forks only for `manage`.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { openEngine, type Engine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { startInspector, type Inspector } from '../../src/inspector/server.ts';
import { parseTokens } from '../../src/gateway/tokens.ts';
import { runCli, startCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';
import { freePort } from '../../src/testing/nats-server.ts';

const tmp = tempDir();
const OPS = 'ops-token-0123456789abcdef';
const VIEWER = 'viewer-token-0123456789abcdef';
const NARROW = 'narrow-token-0123456789abcdef';
let engine: Engine;
let inspector: Inspector;

test.before(async () => {
  engine = await openEngine({ file: tmp.file('insp.db'), runner: echoRunner({ steps: 1 }) });
  await engine.admit('ses_i1', { prompt: 'hello' });
  await engine.awaitIdle('ses_i1');
  inspector = await startInspector({
    log: engine.log,
    port: 0,
    sessions: engine,
    tokens: parseTokens(
      JSON.stringify({
        tokens: [
          { name: 'ops', token: OPS, sessions: '*', tenant: '*', scopes: ['read', 'manage'] },
          { name: 'viewer', token: VIEWER, sessions: '*', tenant: '*', scopes: ['read'] },
          { name: 'narrow', token: NARROW, sessions: 'ses_web_', scopes: ['read', 'manage'] },
        ],
      }),
      'test',
    ),
  });
});

test.after(async () => {
  await inspector?.close();
  await engine?.close();
  tmp.remove();
});

const get = async (path: string, token?: string) => {
  const res = await fetch(new URL(path, inspector.url), { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, text: await res.text() };
};
const fork = async (token: string, sessionId: string) => {
  const res = await fetch(new URL('/api/sessions/ses_i1/fork', inspector.url), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ sessionId }),
  });
  return { status: res.status, text: await res.text() };
};

test('inspector tokens: the page for anyone, the API only for a token reaching every session with read', async () => {
  assert.is((await get('/')).status, 200, 'the page holds no data');
  for (const path of ['/api/sessions', '/api/sessions/ses_i1', '/api/sessions/ses_i1/conversation', '/api/chart.svg', '/api/events']) {
    assert.is((await get(path)).status, 401, `${path} without a token`);
    assert.is((await get(path, 'not-a-token-anyone-issued')).status, 401, `${path} with an unknown token`);
  }
  const narrow = await get('/api/sessions', NARROW);
  assert.is(narrow.status, 403);
  assert.match(narrow.text, 'does not reach every session');
  const listed = await get('/api/sessions', VIEWER);
  assert.is(listed.status, 200);
  assert.match(listed.text, 'ses_i1');
  const stream = await fetch(new URL(`/api/events?access_token=${VIEWER}`, inspector.url));
  assert.is(stream.status, 200, 'the page EventSource passes the token in the query');
  await stream.body?.cancel();
});

test('inspector tokens: a fork needs manage', async () => {
  const refused = await fork(VIEWER, 'ses_i1_copy');
  assert.is(refused.status, 403);
  assert.match(refused.text, 'Token viewer lacks scope manage');
  const forked = await fork(OPS, 'ses_i1_copy');
  assert.is(forked.status, 200, forked.text);
});

test('inspector tokens: bound beyond loopback without tokens it refuses to start, saying how (in process and sessiond inspect)', async () => {
  try {
    await startInspector({ log: engine.log, port: 0, host: '0.0.0.0' });
    assert.unreachable('it started');
  } catch (err) {
    assert.match((err as Error).message, 'Refusing to serve the inspector on 0.0.0.0 without tokens');
  }
  const r = await runCli(['inspect', '--db', tmp.file('insp.db'), '--host', '0.0.0.0', '--port', String(await freePort())]);
  assert.is.not(r.code, 0);
  assert.match(r.stderr, 'Refusing to serve the inspector on 0.0.0.0 without tokens');
  assert.match(r.stderr, '--tokens FILE');
});

test('inspector tokens: sessiond inspect --host 0.0.0.0 --tokens FILE serves, and asks the API for a token', async () => {
  const file = tmp.file('tokens.json');
  writeFileSync(file, JSON.stringify({ tokens: [{ name: 'viewer', token: VIEWER, sessions: '*', tenant: '*', scopes: ['read'] }] }));
  const port = await freePort();
  const p = startCli(['inspect', '--db', tmp.file('insp.db'), '--host', '0.0.0.0', '--port', String(port), '--tokens', file]);
  try {
    await p.waitFor('tokens: 1 from');
    const base = `http://127.0.0.1:${port}`;
    assert.is((await fetch(`${base}/api/sessions`)).status, 401);
    assert.is((await fetch(`${base}/api/sessions`, { headers: { authorization: `Bearer ${VIEWER}` } })).status, 200);
  } finally {
    p.child.kill('SIGTERM');
    await p.exited;
  }
});

test('inspector tokens: sessiond start --inspect --tokens FILE: the worker inspector asks for a token, and its fork for manage', async () => {
  const file = tmp.file('worker-tokens.json');
  writeFileSync(
    file,
    JSON.stringify({
      tokens: [
        { name: 'viewer', token: VIEWER, sessions: '*', tenant: '*', scopes: ['read'] },
        { name: 'ops', token: OPS, sessions: '*', tenant: '*', scopes: ['read', 'manage'] },
      ],
    }),
  );
  const port = await freePort();
  const w = startCli(['start', '--db', tmp.file('worker.db'), '--inspect', String(port), '--tokens', file]);
  try {
    await w.waitFor('inspector: http://');
    const base = `http://127.0.0.1:${port}`;
    assert.is((await fetch(`${base}/api/sessions`)).status, 401);
    const post = (token: string) =>
      fetch(`${base}/api/sessions/ses_none/fork`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ sessionId: 'ses_copy' }),
      });
    assert.is((await post(VIEWER)).status, 403);
    assert.is((await post(OPS)).status, 404, 'manage passes: the source does not exist');
  } finally {
    w.child.kill('SIGTERM');
    await w.exited;
  }
});

test.run();
