/**
 * The inspector in a real browser on a session whose log holds a notBefore past what a Date can
 * hold (written before admissions refused such times): the page shows the raw number and throws
 * nothing.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { openEngine, type Engine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { startInspector, type Inspector } from '../../src/inspector/server.ts';
import { tempDir } from '../support/tmp.ts';

const CHROMIUM = process.env.SESSIOND_CHROMIUM ?? '/usr/bin/chromium';
const FAR = 8.64e15 + 1;
const tmp = tempDir();
let engine: Engine;
let inspector: Inspector;
let browser: Browser;

test.before(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium is not installed at ${CHROMIUM}: apt-get install -y chromium, or set SESSIOND_CHROMIUM.`);
  engine = await openEngine({ file: tmp.file('far.db'), runner: echoRunner() });
  await engine.execution.handler.execute('ses_far', (now) => ({
    type: 'admit',
    now,
    inputId: 'inp_far',
    prompt: 'much later',
    delivery: 'queue',
    wake: false,
    limits: { maxPendingInputs: 10, maxPendingBytes: 1_000_000 },
    notBefore: FAR,
  }));
  inspector = await startInspector({ log: engine.log, port: 0 });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
});

test.after(async () => {
  await browser?.close();
  await inspector?.close();
  await engine?.close();
  tmp.remove();
});

test('inspector - a notBefore past the Date range shows as its number, and the page throws nothing', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  await page.goto(`${inspector.url}#/session/ses_far`);
  await page.waitForFunction(() => document.querySelector('#conversation-seq')?.textContent?.trim() === '1', undefined, { timeout: 15_000 });
  await page.waitForFunction((far) => document.body.textContent?.includes(`not before ${far} ms`), String(FAR), { timeout: 15_000 });
  assert.equal(errors, [], 'no script errors on the page');
  await page.close();
});

test.run();
