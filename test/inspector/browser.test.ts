/**
 * The inspector page in a real browser (Chromium through playwright-core): a session's state
 * changes live on the page, time travel to an earlier sequence shows the state, lease, rows and
 * chart highlight as they were, and a screenshot is kept (test/artifacts/inspector.png, copied to
 * docs/inspector.png for the README when SESSIOND_UPDATE_DOCS=1). Needs Chromium at /usr/bin/chromium (CI installs it); without
 * it this test fails and says how to install it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { openEngine, type Engine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { startInspector, type Inspector } from '../../src/inspector/server.ts';
import { tempDir } from '../support/tmp.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { eventImporter } from '../../src/storage/sqlite/import-events.ts';
import { captureTemplate, cloneTurn, sessionName } from '../../bench/lib/corpus.ts';

const CHROMIUM = process.env.SESSIOND_CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACT = fileURLToPath(new URL('../artifacts/inspector.png', import.meta.url));
const LONG_ARTIFACT = fileURLToPath(new URL('../artifacts/inspector-long-session.png', import.meta.url));
const LAUNCH = {
  executablePath: CHROMIUM,
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
};
const DOCS_COPY = fileURLToPath(new URL('../../docs/inspector.png', import.meta.url));
const WAIT = { timeout: 15_000 };

/** Waits until the element's trimmed text is `text` (polls in the page; no sleeps). */
async function textIs(page: Page, selector: string, text: string): Promise<void> {
  try {
    await page.waitForFunction(([sel, want]) => document.querySelector(sel!)?.textContent?.trim() === want, [selector, text] as const, WAIT);
  } catch (err) {
    const got = await page
      .locator(selector)
      .first()
      .textContent()
      .catch(() => '(missing)');
    throw new Error(`waiting for ${selector} to read ${JSON.stringify(text)}; it reads ${JSON.stringify(got)}: ${(err as Error).message.split('\n')[0]}`);
  }
}

/**
 * Clicks until the element's text is `text`: the session list is rendered again on every pushed
 * state, and a click that lands while the row is replaced selects nothing (seen once in CI: the
 * session never opened). Each try waits for the answer (no sleep); 15 s in all.
 */
async function clickUntil(page: Page, target: string, selector: string, text: string): Promise<void> {
  const deadline = Date.now() + WAIT.timeout;
  for (;;) {
    await page.click(target);
    try {
      await page.waitForFunction(([sel, want]) => document.querySelector(sel!)?.textContent?.trim() === want, [selector, text] as const, { timeout: 2_000 });
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
  }
}

test('inspector page - live state, time travel to an earlier sequence, screenshot', async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: the browser test needs it. Install it with \`apt-get install -y chromium\` (CI does), or point SESSIOND_CHROMIUM at a Chromium binary.`,
    );
  }
  const tmp = tempDir();
  let engine: Engine | undefined;
  let inspector: Inspector | undefined;
  let browser: Browser | undefined;
  try {
    engine = await openEngine({ file: tmp.file('browser.db'), runner: echoRunner({ steps: 3, delayMs: 400 }) });
    inspector = await startInspector({ log: engine.log, port: 0 });
    browser = await chromium.launch(LAUNCH);
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.goto(inspector.url);
    await textIs(page, '#live-status', 'live');
    assert.ok(await page.locator('#no-sessions').isVisible(), 'the empty log says so');

    // a session runs: its state changes on the page, pushed by server-sent events
    await engine.admit('ses_browser', { prompt: 'watch this session change state on its chart' });
    const listState = '[data-session-id="ses_browser"] [data-testid="session-state"]';
    await textIs(page, listState, 'running');
    await clickUntil(page, '[data-session-id="ses_browser"] a', '#session-id', 'ses_browser');
    await textIs(page, listState, 'settled');
    await textIs(page, '#current-state', 'settled');
    await textIs(page, '#at-state', 'settled');
    await textIs(page, '#chart g.current title', 'settled');

    const events = await engine.log.readSession('ses_browser');
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="timeline-row"]').length === n, events.length, WAIT);
    assert.is(await page.locator('#seq-max').textContent(), String(events.length));

    // time travel: click the claim in the timeline
    const claim = events.find((e) => e.type === 'execution.claimed')!;
    await page.click(`[data-testid="timeline-row"][data-seq="${claim.seq}"] button`);
    await textIs(page, '#at-seq', String(claim.seq));
    await textIs(page, '#at-state', 'claimed');
    await textIs(page, '#chart g.current title', 'claimed');
    assert.match((await page.locator('[data-testid="lease-status"]').textContent()) ?? '', /^live \(expires in \d+\.\d s\)$/);
    assert.is(await page.locator('[data-testid="lease-owner"]').textContent(), engine.ownerId);
    assert.is(await page.locator('[data-testid="rows-executions"] tbody tr').count(), 1, 'the execution row as it was then');
    assert.match((await page.locator('[data-testid="at-pending"]').textContent()) ?? '', /inp_\w+ \(queue, admitted at seq 1\)/);
    assert.is(await page.locator('#current-state').textContent(), 'settled', 'the present is still shown');
    assert.is(await page.locator('#follow-live').getAttribute('aria-pressed'), 'false');
    assert.match(page.url(), `#/session/ses_browser/at/${claim.seq}`);
    assert.is(await page.locator(`[data-testid="timeline-row"][data-seq="${claim.seq + 1}"]`).getAttribute('class'), 'future');

    // the slider: to the middle of the turn
    const step = events.find((e) => e.type === 'step.started')!;
    await page.locator('#seq-slider').fill(String(step.seq));
    await textIs(page, '#at-seq', String(step.seq));
    await textIs(page, '#at-state', 'running');
    await textIs(page, '#chart g.current title', 'running');
    assert.match((await page.locator('[data-testid="at-event"]').textContent()) ?? '', /^step\.started at \d\d:\d\d:\d\d\.\d{3} UTC$/);
    assert.ok((await page.locator('[data-testid="rows-messages"] tbody tr').count()) >= 2, 'the user message and the assistant step');

    mkdirSync(dirname(ARTIFACT), { recursive: true });
    await page.screenshot({ path: ARTIFACT, fullPage: true });
    if (process.env.SESSIOND_UPDATE_DOCS === '1') {
      // refresh the README's picture on purpose only, so test runs leave the tree clean
      mkdirSync(dirname(DOCS_COPY), { recursive: true });
      copyFileSync(ARTIFACT, DOCS_COPY);
    }

    // a link to a sequence opens there; following live returns to the present
    await page.goto(`${inspector.url}#/session/ses_browser/at/0`);
    await textIs(page, '#at-state', 'idle');
    await textIs(page, '[data-testid="lease-status"]', 'no execution yet');
    await page.click('#follow-live');
    await textIs(page, '#at-state', 'settled');
    assert.is(await page.locator('#at-seq').textContent(), String(events.length));
    assert.equal(errors, [], 'no script errors on the page');
  } finally {
    await browser?.close();
    await inspector?.close();
    await engine?.close();
    tmp.remove();
  }
});

test('inspector page - a 100,000-event session: scroll the timeline, jump to a seq, filter by type, screenshot', async () => {
  const tmp = tempDir();
  const db = openDatabase(tmp.file('long.db'));
  migrate(db);
  const log = new SqliteEventLog(db);
  let inspector: Inspector | undefined;
  let browser: Browser | undefined;
  try {
    const template = await captureTemplate();
    const importer = eventImporter(db);
    let lastSeq = 0;
    for (let turn = 0; lastSeq < 100_000; turn++) {
      const events = cloneTurn(template, 0, turn).flatMap((b) => b.events);
      importer(events);
      lastSeq = events[events.length - 1]!.seq;
    }
    const session = sessionName(0);
    inspector = await startInspector({ log, port: 0 });
    browser = await chromium.launch(LAUNCH);
    const page = await browser.newPage({ viewport: { width: 1440, height: 1100 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    const rows = (n: number) => page.waitForFunction((want) => document.querySelectorAll('[data-testid="timeline-row"]').length === want, n, WAIT);

    await page.goto(`${inspector.url}#/session/${session}`);
    await textIs(page, '#current-seq', String(lastSeq));
    await textIs(page, '#at-seq', String(lastSeq));
    await rows(100);
    assert.is(await page.locator('[data-testid="timeline-row"]').first().getAttribute('data-seq'), String(lastSeq - 99), 'the last page');

    // scrolling to the top of the timeline loads the page before
    await page.locator('#timeline-wrap').evaluate((el) => {
      el.scrollTop = 0;
    });
    await rows(200);
    assert.is(await page.locator('[data-testid="timeline-row"]').first().getAttribute('data-seq'), String(lastSeq - 199));

    // jump to a sequence in the middle: that page, travelled there
    const middle = Math.floor(lastSeq / 2);
    await page.fill('#jump-seq', String(middle));
    await page.click('[data-testid="filter-apply"]');
    await textIs(page, '#at-seq', String(middle));
    assert.is(await page.locator(`[data-testid="timeline-row"][data-seq="${middle}"]`).getAttribute('aria-current'), 'true');
    await page.locator('#timeline-wrap').evaluate((el) => {
      el.scrollTop = el.scrollHeight;
    });
    await page.waitForFunction(
      (m) =>
        document.querySelectorAll('[data-testid="timeline-row"]').length > 100 &&
        Number(document.querySelector('#timeline tbody tr:last-child')?.getAttribute('data-seq')) > m + 50,
      middle,
      WAIT,
    );

    // filter by type: only claims, the latest page of them
    await page.fill('#jump-seq', '');
    await page.fill('#filter-type', 'execution.claimed');
    await page.click('[data-testid="filter-apply"]');
    await page.waitForFunction(
      () =>
        [...document.querySelectorAll('[data-testid="timeline-type"]')].every((td) => td.textContent === 'execution.claimed') &&
        document.querySelectorAll('[data-testid="timeline-row"]').length === 100,
      undefined,
      WAIT,
    );
    assert.match(
      (await page.locator('#timeline-status').textContent()) ?? '',
      /^100 matching \(type execution\.claimed\), seq \d+\u2013\d+ of \d+; scroll up for earlier$/,
    );

    // travel to a claim: the chart shows the state and the move just taken; commands on demand
    const claim = Number(await page.locator('[data-testid="timeline-row"]').nth(50).getAttribute('data-seq'));
    await page.click(`[data-testid="timeline-row"][data-seq="${claim}"] button`);
    await textIs(page, '#at-seq', String(claim));
    await textIs(page, '#at-state', 'claimed');
    await textIs(page, '#chart g.current title', 'claimed');
    assert.is(await page.locator('#chart g.taken').count(), 1, 'the move just taken');
    assert.is(await page.locator('#chart g.commands').count(), 0, 'commands hidden by default');
    assert.match((await page.locator('[data-testid="at-rows"]').textContent()) ?? '', /messages \(latest 50 of \d+\)/);

    mkdirSync(dirname(LONG_ARTIFACT), { recursive: true });
    await page.screenshot({ path: LONG_ARTIFACT }); // the viewport: chart, travel state, timeline

    await page.click('#chart-commands');
    await page.waitForFunction(() => document.querySelectorAll('#chart g.commands').length > 0, undefined, WAIT);
    assert.equal(errors, [], 'no script errors on the page');
  } finally {
    await browser?.close();
    await inspector?.close();
    await log.close();
    db.close();
    tmp.remove();
  }
});

test.run();
