/**
 * The inspector against DNS rebinding and cross-site writes, with raw HTTP requests to 127.0.0.1
 * that differ only in their headers: a web page elsewhere whose name points at this machine sends
 * `Host: evil.example`, and must not read a session's prompts; requests for the bound address are
 * answered as before; writes from another origin are refused before the route says 405.
 */
import { request } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEngine, type Engine } from '../../src/engine.ts';
import { ErrorCode } from '../../src/errors.ts';
import { allowedHosts } from '../../src/inspector/host-check.ts';
import { startInspector, type Inspector } from '../../src/inspector/server.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { expectCode } from '../../src/testing/fixtures.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
let engine: Engine;
let inspector: Inspector;
const SECRET = 'a prompt only the user may read';

test.before(async () => {
  engine = await openEngine({ file: tmp.file('hosts.db'), runner: echoRunner({ steps: 1 }) });
  await engine.admit('ses_secret', { prompt: SECRET });
  await engine.awaitIdle('ses_secret');
  inspector = await startInspector({ log: engine.log, port: 0 });
});

test.after(async () => {
  await inspector?.close();
  await engine?.close();
  tmp.remove();
});

/** One request to 127.0.0.1:<port> with exactly these headers (Host included). */
function raw(path: string, headers: Record<string, string>, method = 'GET', port = inspector.port): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers, setHost: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), body }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('host check - a request for another host (DNS rebinding) is refused with 421 and a plain message, on every route', async () => {
  for (const path of ['/', '/api/sessions', '/api/sessions/ses_secret', '/api/sessions/ses_secret/events', '/api/events', '/nowhere']) {
    for (const host of [
      'evil.example',
      `evil.example:${inspector.port}`,
      `127.0.0.1.evil.example:${inspector.port}`,
      `localhost:${inspector.port + 1}`,
      `127.0.0.1`,
    ]) {
      const res = await raw(path, { host });
      assert.is(res.status, 421, `${host} ${path}`);
      assert.is(res.type, 'text/plain; charset=utf-8');
      assert.match(res.body, `not for host ${JSON.stringify(host)}`);
      assert.match(res.body, `Open http://127.0.0.1:${inspector.port}/`);
      assert.not.match(res.body, SECRET);
    }
  }
  const huge = await raw('/api/sessions', { host: `${'h'.repeat(5000)}.example` });
  assert.is(huge.status, 421);
  assert.ok(huge.body.length < 600, 'the echoed host is cut');
});

test('host check - requests for the bound address, localhost or [::1] with the port are answered', async () => {
  for (const host of [`127.0.0.1:${inspector.port}`, `localhost:${inspector.port}`, `LOCALHOST:${inspector.port}`, `[::1]:${inspector.port}`]) {
    const res = await raw('/api/sessions/ses_secret/events', { host });
    assert.is(res.status, 200, `${host}: ${res.body.slice(0, 200)}`);
    assert.match(res.body, SECRET);
  }
  const page = await fetch(inspector.url);
  assert.is(page.status, 200, 'the page, as a browser opens it');
});

test("host check - a write from another origin is refused with 403; one from the inspector's own origin gets the usual 405", async () => {
  const host = `127.0.0.1:${inspector.port}`;
  for (const origin of ['http://evil.example', 'null', `http://localhost:${inspector.port}`, `https://${host}`]) {
    const res = await raw('/api/sessions', { host, origin, 'content-length': '0' }, 'POST');
    assert.is(res.status, 403, origin);
    assert.is(res.type, 'text/plain; charset=utf-8');
    assert.match(res.body, `from origin ${JSON.stringify(origin)}`);
  }
  const same = await raw('/api/sessions', { host, origin: `http://${host}`, 'content-length': '0' }, 'POST');
  assert.is(same.status, 405, 'same origin: the route answers (the inspector is read-only)');
  const none = await raw('/api/sessions', { host, 'content-length': '0' }, 'DELETE');
  assert.is(none.status, 405, 'no Origin (not a browser page): the route answers');
  const evil = await raw('/api/sessions', { host: 'evil.example', origin: 'http://evil.example', 'content-length': '0' }, 'POST');
  assert.is(evil.status, 421, 'a foreign host is refused first');
});

test('host check - an inspector bound elsewhere answers its own address, and the names given in allowedHosts', async () => {
  const other = await startInspector({ log: engine.log, port: 0, allowedHosts: ['inspector.internal', 'alias.internal:8080'] });
  try {
    assert.is((await raw('/api/sessions', { host: `inspector.internal:${other.port}` }, 'GET', other.port)).status, 200);
    assert.is((await raw('/api/sessions', { host: `inspector.internal:${other.port + 1}` }, 'GET', other.port)).status, 421);
    assert.is((await raw('/api/sessions', { host: 'alias.internal:8080' }, 'GET', other.port)).status, 200, 'a name behind a proxy on another port');
  } finally {
    await other.close();
  }
  assert.equal([...allowedHosts('10.1.2.3', 4600)], ['10.1.2.3:4600'], 'bound to one outside address: that address only');
  assert.equal([...allowedHosts('::1', 4600)].sort(), ['127.0.0.1:4600', '[::1]:4600', 'localhost:4600']);
  const wildcard = allowedHosts('0.0.0.0', 4600);
  assert.ok(wildcard.has('127.0.0.1:4600') && wildcard.has('0.0.0.0:4600'), "a wildcard bind answers loopback, its own url and the machine's addresses");
  assert.not.ok(wildcard.has('evil.example:4600'));
  assert.ok(allowedHosts('127.0.0.1', 80).has('localhost'), 'port 80 may be left out');
  await expectCode(startInspector({ log: engine.log, port: 0, allowedHosts: ['bad host/'] }), ErrorCode.InvalidOption, 'Invalid inspector option allowedHosts');
});

test.run();
