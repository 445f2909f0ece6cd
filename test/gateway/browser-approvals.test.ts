/**
 * Approvals from a real browser: Chromium opens docs/gateway-page.html (served from another origin),
 * sends a prompt through `sessiond serve --http` (a real process, a runner module whose turn asks a
 * person before it deploys) and shows the call with Approve and Deny. The serving process is
 * SIGKILLed while the turn waits and started again on the same port and file; the click on Approve
 * goes to the new worker, which resumes the turn to its end: the call ran once. A screenshot of the
 * waiting page is kept (test/artifacts/gateway-page-approval.png; copied to docs/ when SESSIOND_UPDATE_DOCS=1).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type Server } from 'node:http';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import { startCli, ROOT, type LongRunning } from '../support/cli.ts';
import { writeRunner } from '../support/wait-runner.ts';
import { stablePort } from '../../src/testing/nats-server.ts';
import { tempDir } from '../support/tmp.ts';

const CHROMIUM = process.env.SESSIOND_CHROMIUM ?? '/usr/bin/chromium';
const WAIT = { timeout: 30_000 };
const TOKEN = 'approver-page-token-0123456789';
const ARTIFACT = `${ROOT}test/artifacts/gateway-page-approval.png`;
const tmp = tempDir();
let page: Server;

test.after(async () => {
  await new Promise((r) => page?.close(r));
  tmp.remove();
});

test('the page shows the approval; the worker is SIGKILLed while the turn waits; Approve on the new worker resumes it to its end', async () => {
  const html = readFileSync(`${ROOT}docs/gateway-page.html`, 'utf8');
  page = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(html);
  });
  await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
  const tokens = tmp.file('tokens.json');
  writeFileSync(tokens, JSON.stringify({ tokens: [{ name: 'page', token: TOKEN, sessions: 'ses_web_', scopes: ['read', 'prompt', 'approve'] }] }));
  const runner = tmp.file('runner.mjs');
  const effects = tmp.file('effects.txt');
  writeRunner(runner, effects);
  writeFileSync(effects, '');
  const db = tmp.file('serve.db');
  const port = await stablePort();
  const serve = (): LongRunning =>
    startCli(['serve', '--http', String(port), '--db', db, '--tokens', tokens, '--cors-origin', origin, '--runner', runner, '--heartbeat-ms', '500']);
  let server = serve();
  await server.waitFor('gateway: http://127.0.0.1:');
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  try {
    const tab = await browser.newPage();
    const session = 'ses_web_approve';
    await tab.goto(`${origin}/gateway-page.html?gateway=http://127.0.0.1:${port}&token=${TOKEN}&session=${session}`);
    await tab.waitForFunction(() => document.querySelector('[data-testid="status"]')?.textContent === 'connected', undefined, WAIT);
    await tab.fill('#prompt', 'deploy');
    await tab.click('#send button');
    await tab.waitForSelector('[data-testid="approve"]', WAIT);
    await tab.waitForFunction(() => document.querySelector('[data-testid="status"]')?.textContent === 'waiting for your approval', undefined, WAIT);
    assert.match(await tab.$eval('.approval', (el) => el.textContent ?? ''), 'deploy {"to":"prod"}', 'the call and its input');
    mkdirSync(dirname(ARTIFACT), { recursive: true });
    await tab.screenshot({ path: ARTIFACT });
    if (process.env.SESSIOND_UPDATE_DOCS === '1') copyFileSync(ARTIFACT, `${ROOT}docs/gateway-page-approval.png`);

    // the worker dies while the turn waits (holding nothing); a new one starts on the same file
    server.child.kill('SIGKILL');
    await server.exited;
    await tab.waitForFunction(() => document.querySelector('[data-testid="status"]')?.textContent?.includes('reconnecting'), undefined, WAIT);
    server = serve();
    await server.waitFor('gateway: http://127.0.0.1:');
    await tab.waitForFunction(() => document.querySelector('[data-testid="status"]')?.textContent === 'connected', undefined, WAIT);

    await tab.click('[data-testid="approve"]');
    await tab.waitForSelector(`.approval[data-outcome="approved"]`, WAIT);
    await tab.waitForFunction(() => document.querySelector('[data-testid="status"]')?.textContent === 'answered (succeeded)', undefined, WAIT);
    assert.match(await tab.$eval('#log', (el) => el.textContent ?? ''), `done: approval call_${session} approved`, 'the resumed turn answered');
    assert.is((await tab.$$('[data-testid="approve"]')).length, 0, 'the buttons are gone once decided');
    const ran = readFileSync(effects, 'utf8').trim().split('\n');
    assert.is(ran.length, 1, 'the approved call ran once');
    assert.match(ran[0]!, `${session} ${session}:exe_`);
  } finally {
    await browser.close();
    server.child.kill('SIGTERM');
    await server.exited;
  }
});

test.run();
