/**
 * The gateway from a real browser: Chromium opens docs/gateway-page.html (the copy-paste example,
 * served from another origin, so CORS is real), sends a prompt through `sessiond serve --http` (a
 * real process, with a tokens file) and renders the streamed answer. The serving process is
 * SIGKILLed mid-answer and started again on the same port and file: the page's EventSource
 * reconnects with Last-Event-ID, gets exactly the events it missed from the log, then the recovered
 * turn live, and shows the answer; every committed seq reached the page once, in order. A screenshot
 * is kept (test/artifacts/gateway-page.png; copied to docs/ when SESSIOND_UPDATE_DOCS=1).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type Server } from 'node:http';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import { startCli, ROOT, type LongRunning } from '../support/cli.ts';
import { stablePort } from '../../src/testing/nats-server.ts';
import { tempDir } from '../support/tmp.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { storedSeqs } from '../support/stored-events.ts';

const CHROMIUM = process.env.SESSIOND_CHROMIUM ?? '/usr/bin/chromium';
const WAIT = { timeout: 30_000 };
const TOKEN = 'page-token-0123456789abcdef';
const ARTIFACT = `${ROOT}test/artifacts/gateway-page.png`;
const tmp = tempDir();
let page: Server;

test.after(async () => {
  await new Promise((r) => page?.close(r));
  tmp.remove();
});

function seqsInLog(file: string, sessionId: string): number[] {
  const db = openDatabase(file, { readonly: true });
  try {
    return storedSeqs(db, sessionId);
  } finally {
    db.close();
  }
}

test('the example page through a SIGKILL of the serving worker and a reconnect: the answer arrives, no event lost or doubled', async () => {
  const html = readFileSync(`${ROOT}docs/gateway-page.html`, 'utf8');
  page = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(html);
  });
  await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
  const tokens = tmp.file('tokens.json');
  writeFileSync(tokens, JSON.stringify({ tokens: [{ name: 'page', token: TOKEN, sessions: 'ses_web_' }] }));
  const db = tmp.file('serve.db');
  const port = await stablePort();
  const serve = (): LongRunning =>
    startCli([
      'serve',
      '--http',
      String(port),
      '--db',
      db,
      '--tokens',
      tokens,
      '--cors-origin',
      origin,
      '--echo-delay-ms',
      '1200',
      '--lease-ms',
      '2000',
      '--heartbeat-ms',
      '500',
      '--sweep-ms',
      '300',
    ]);
  let server = serve();
  await server.waitFor('gateway: http://127.0.0.1:');
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  try {
    const tab = await browser.newPage();
    const session = 'ses_web_crash';
    await tab.goto(`${origin}/gateway-page.html?gateway=http://127.0.0.1:${port}&token=${TOKEN}&session=${session}`);
    await tab.waitForFunction(() => document.querySelector('[data-testid="status"]')?.textContent === 'connected', undefined, WAIT);
    await tab.fill('#prompt', 'one two three four five six');
    await tab.click('#send button');
    await tab.waitForSelector('.turn.user', WAIT);
    // the first step's text is committed; the next steps are still to come: kill the process
    await tab.waitForSelector('.turn.assistant[data-done="1"]', WAIT);
    // the deltas came live from the serving worker's in-process bus (the embedded default)
    assert.ok((await tab.evaluate(() => (window as unknown as { sessiond: { deltas: number } }).sessiond.deltas)) > 0, 'text deltas streamed');
    server.child.kill('SIGKILL');
    await server.exited;
    await tab.waitForFunction(() => document.querySelector('[data-testid="status"]')?.textContent?.includes('reconnecting'), undefined, WAIT);
    server = serve();
    await server.waitFor('gateway: http://127.0.0.1:');
    await tab.waitForFunction(() => document.querySelector('[data-testid="status"]')?.textContent?.startsWith('answered'), undefined, WAIT);
    const seen = await tab.evaluate(() => (window as unknown as { sessiond: { seen: number[] } }).sessiond.seen);
    const logged = seqsInLog(db, session);
    assert.equal(seen, logged, 'every committed event once, in order, across the crash and the reconnect');
    assert.ok(logged.length > 0 && (await tab.$$('.turn.assistant')).length >= 2, 'the answer before the crash and after it are shown');
    const text = await tab.$eval('#log', (el) => el.textContent ?? '');
    assert.match(text, 'one two three four five six', 'the prompt');
    assert.match(text, 'echo:', 'the answer');
    assert.not.match(text, /exe_|own_|inp_|msg_/, 'no internal ids reach the conversation');
    assert.ok((await tab.$$('.turn.assistant.interrupted')).length >= 1, 'the part cut off by the crash is marked');
    mkdirSync(dirname(ARTIFACT), { recursive: true });
    await tab.screenshot({ path: ARTIFACT });
    if (process.env.SESSIOND_UPDATE_DOCS === '1') copyFileSync(ARTIFACT, `${ROOT}docs/gateway-page.png`);
  } finally {
    await browser.close();
    server.child.kill('SIGTERM');
    await server.exited;
  }
});

test.run();
