/**
 * URLs in prompts, end to end: a prompt naming a loopback or metadata address is refused at
 * admission through the gateway (a worker running the openai runner against the local fake model
 * server) and through `sessiond prompt`, and neither the fake model server nor a local HTTP server
 * the URL names sees a request for it; an allowlisted loopback host is admitted.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startSessiond, type Sessiond } from '../../src/host.ts';
import { openaiRunner } from '../../src/runner/model/openai.ts';
import { startGateway, type Gateway } from '../../src/gateway/server.ts';
import { engineLive } from '../../src/gateway/live.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../src/testing/fake-openai.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { runCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

const KEY = 'sk-test-key';
const tmp = tempDir();
let model: FakeOpenAI;
let local: Server;
let localUrl: string;
const localHits: string[] = [];
let strict: Sessiond;
let allowing: Sessiond;
let gw: Gateway;
let gwAllowing: Gateway;

const runner = () => openaiRunner({ model: 'fake-model', baseURL: model.url, apiKey: KEY, retry: { baseDelayMs: 10, maxDelayMs: 50 } });

test.before(async () => {
  model = await startFakeOpenAI({ apiKey: KEY });
  local = createServer((req, res) => {
    localHits.push(req.url ?? '');
    res.end('secret');
  });
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
  localUrl = `http://127.0.0.1:${(local.address() as AddressInfo).port}`;
  strict = await startSessiond({ db: tmp.file('strict.db'), runner: runner() });
  allowing = await startSessiond({ db: tmp.file('allowing.db'), runner: runner(), urls: { allow: ['127.0.0.1'] } });
  gw = await startGateway({ sessions: strict, live: engineLive(strict), port: 0 });
  gwAllowing = await startGateway({ sessions: allowing, live: engineLive(allowing), port: 0 });
});

test.after(async () => {
  await gw?.close();
  await gwAllowing?.close();
  await strict?.close();
  await allowing?.close();
  await model?.close();
  await new Promise<void>((resolve) => (local ? local.close(() => resolve()) : resolve()));
  tmp.remove();
});

async function admit(g: Gateway, session: string, body: unknown) {
  const res = await fetch(new URL(`/v1/sessions/${session}/inputs`, g.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: JSON read loosely in assertions
  return { status: res.status, body: (await res.json()) as any };
}

const chats = () => model.requests.filter((r) => r.path.endsWith('/chat/completions'));
const mentions = (text: string) => chats().filter((r) => JSON.stringify(r.chat).includes(text)).length;

test('gateway - image and file URLs to loopback, metadata or over http are refused (400, naming host and range); no server sees a request', async () => {
  for (const [url, says] of [
    [`${localUrl}/cat.png`, 'is http'],
    [`https://127.0.0.1:${(local.address() as AddressInfo).port}/cat.png`, 'host 127.0.0.1 is in the loopback range 127.0.0.0/8'],
    ['https://169.254.169.254/latest/meta-data/iam', 'host 169.254.169.254 is in the metadata range'],
    ['https://[::ffff:127.0.0.1]/cat.png', 'IPv4-mapped'],
    ['https://localhost/cat.png', 'localhost is loopback'],
  ] as const) {
    const refused = await admit(gw, 'ses_url_gw', {
      prompt: [
        { type: 'text', text: 'look' },
        { type: 'image', url },
      ],
    });
    assert.is(refused.status, 400, url);
    assert.is(refused.body.error.code, 'invalid_option', url);
    assert.match(refused.body.error.message, says, url);
    const file = await admit(gw, 'ses_url_gw', { prompt: [{ type: 'file', url, mediaType: 'application/pdf' }] });
    assert.is(file.status, 400, `a file part: ${url}`);
  }
  // a prompt the guard lets through runs a turn: the model server saw that one and none before it
  const before = chats().length;
  assert.is((await admit(gw, 'ses_url_gw', { prompt: 'just words' })).status, 200);
  await waitFor(() => chats().length > before, { timeoutMs: 10_000, what: 'the model request of the plain prompt' });
  await strict.awaitIdle('ses_url_gw');
  assert.is(chats().length, before + 1, 'one model request: the plain prompt');
  assert.is(mentions('127.0.0.1'), 0, 'no URL reached the model server');
  assert.is(mentions('169.254.169.254'), 0);
  assert.equal(localHits, [], 'the local server saw no request');
});

test('gateway - an allowlisted loopback host is admitted (http too) and forwarded', async () => {
  const url = `${localUrl}/cat.png`;
  const admitted = await admit(gwAllowing, 'ses_url_allowed', {
    prompt: [
      { type: 'text', text: 'look' },
      { type: 'image', url },
    ],
  });
  assert.is(admitted.status, 200, JSON.stringify(admitted.body));
  await waitFor(() => mentions(url) > 0, { timeoutMs: 10_000, what: 'the model request naming the allowed URL' });
  await allowing.awaitIdle('ses_url_allowed');
  // still no metadata, even where loopback is allowed
  const metadata = await admit(gwAllowing, 'ses_url_allowed', { prompt: [{ type: 'image', url: 'https://169.254.169.254/' }] });
  assert.is(metadata.status, 400);
});

test('cli - sessiond prompt --image to an internal URL exits 2 with the reason and admits nothing; --allow-url-host admits it', async () => {
  const db = tmp.file('cli.db');
  const before = model.requests.length;
  const refused = await runCli(['prompt', 'ses_url_cli', 'look', '--image', `${localUrl}/cat.png`, '--db', db]);
  assert.is(refused.code, 2, refused.stdout + refused.stderr);
  assert.match(refused.stderr, 'is http: a URL in a prompt must be https');
  const metadata = await runCli(['prompt', 'ses_url_cli', 'look', '--image', 'https://169.254.169.254/x.png', '--db', db]);
  assert.is(metadata.code, 2);
  assert.match(metadata.stderr, 'metadata range 169.254.169.254/32');
  const status = await runCli(['status', 'ses_url_cli', '--db', db]);
  assert.match(status.stdout + status.stderr, 'ses_url_cli', 'status answered');
  assert.not.match(status.stdout, 'pending', 'nothing was admitted');
  const allowed = await runCli(['prompt', 'ses_url_cli', 'look', '--image', `${localUrl}/cat.png`, '--allow-url-host', '127.0.0.1', '--db', db]);
  assert.is(allowed.code, 0, allowed.stdout + allowed.stderr);
  assert.match(allowed.stdout, 'admitted');
  assert.is(model.requests.length, before, 'the model server saw nothing from the CLI');
  assert.equal(localHits, [], 'the local server saw no request');
});

test.run();
