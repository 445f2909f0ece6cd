/**
 * The gateway's answers to malformed requests, over real HTTP: a bad %-escape in a path segment and
 * JSON nested too deep get 400 with the reason (never a 500), and a stalled body gets 408 and its
 * connection closed within the body timeout.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect } from 'node:net';
import { startSessiond, type Sessiond } from '../../src/host.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { startGateway, type Gateway } from '../../src/gateway/server.ts';
import { engineLive } from '../../src/gateway/live.ts';
import { MAX_BODY_DEPTH } from '../../src/nats/command-protocol.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
let sessiond: Sessiond;
let gw: Gateway;
const BODY_TIMEOUT_MS = 400;

test.before(async () => {
  sessiond = await startSessiond({ db: tmp.file('hygiene.db'), runner: echoRunner({ steps: 1 }) });
  gw = await startGateway({ sessions: sessiond, live: engineLive(sessiond), port: 0, bodyTimeoutMs: BODY_TIMEOUT_MS, onError: () => {} });
});

test.after(async () => {
  await gw?.close();
  await sessiond?.close();
  tmp.remove();
});

async function call(method: string, path: string, body?: string) {
  const res = await fetch(new URL(path, gw.url), {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: JSON read loosely in assertions
  return { status: res.status, body: (await res.json()) as any };
}

test('a malformed %-escape in a path segment is a 400 naming it, on every route that decodes one', async () => {
  for (const [method, path, what] of [
    ['GET', '/v1/sessions/ses_%E0%A4%A', 'session id'],
    ['GET', '/v1/sessions/ses_%zz', 'session id'],
    ['POST', '/v1/sessions/ses_ok/calls/call_%C3/approve', 'call id'],
    ['POST', '/v1/sessions/ses_ok/waits/answer%', 'wait name'],
    ['GET', '/v1/sessions/ses_%/events', 'session id'],
  ] as const) {
    if (what !== 'session id') await call('POST', '/v1/sessions/ses_ok/inputs', JSON.stringify({ prompt: 'hi', wake: false }));
    const r = await call(method, path, method === 'POST' ? '{}' : undefined);
    assert.is(r.status, 400, `${method} ${path}`);
    assert.match(r.body.error.message, `The ${what} in the path`, path);
    assert.match(r.body.error.message, 'malformed %-escape', path);
  }
});

test(`JSON nested deeper than ${MAX_BODY_DEPTH} is a 400 with the reason, however deep (never a 500); the gateway answers after`, async () => {
  for (const depth of [MAX_BODY_DEPTH + 1, 1_500, 4_000, 100_000]) {
    const value = `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const r = await call('POST', '/v1/sessions/ses_deep/inputs', `{"prompt":[{"type":"json","value":${value}}]}`);
    assert.is(r.status, 400, `depth ${depth}`);
    assert.is(r.body.error.code, 'invalid_payload');
    assert.match(r.body.error.message, `nested more than ${MAX_BODY_DEPTH} levels deep`);
    const chat = await call('POST', '/v1/chat', `{"sessionId":"ses_deep","message":${value}}`);
    assert.is(chat.status, 400, `chat, depth ${depth}`);
  }
  // brackets inside strings are not nesting
  const flat = await call('POST', '/v1/sessions/ses_deep/inputs', JSON.stringify({ prompt: '['.repeat(5_000), wake: false }));
  assert.is(flat.status, 200);
  assert.is((await call('GET', '/v1/health')).status, 200);
});

/** Sends the head of a POST and part of its body, then nothing: what comes back, and when the socket closed. */
function stall(path: string): Promise<{ reply: string; closedAfterMs: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(gw.port, '127.0.0.1', () => {
      socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"prompt":"hel`);
    });
    let reply = '';
    socket.on('data', (d) => (reply += d));
    socket.on('error', reject);
    socket.on('close', () => resolve({ reply, closedAfterMs: Date.now() - started }));
    setTimeout(() => {
      socket.destroy();
      reject(new Error(`the gateway still held the connection after 10 s: ${reply}`));
    }, 10_000).unref();
  });
}

test('a stalled request body gets 408 and its connection closed within the body timeout', async () => {
  const { reply, closedAfterMs } = await stall('/v1/sessions/ses_stall/inputs');
  assert.match(reply, /^HTTP\/1\.1 408 /);
  assert.match(reply, 'did not arrive within 400 ms');
  assert.ok(closedAfterMs >= BODY_TIMEOUT_MS - 50 && closedAfterMs < BODY_TIMEOUT_MS + 8_000, `closed after ${closedAfterMs} ms`);
  const status = await call('GET', '/v1/sessions/ses_stall');
  assert.is(status.status, 404, 'nothing was admitted');
});

test.run();
