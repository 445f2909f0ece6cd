/**
 * The inspector read at its default size, in a real browser (Chromium through playwright-core) 1400
 * px wide: every label of the state chart is drawn at 11 px or more on screen with the chart whole in
 * its figure (no zooming, no scrolling), and the session list's Tags column lies inside its panel
 * with its text inside the column. The screenshot is kept in test/artifacts/ and copied to
 * docs/images/ (docs/inspector.md) when SESSIOND_UPDATE_DOCS=1.
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

const CHROMIUM = process.env.SESSIOND_CHROMIUM ?? '/usr/bin/chromium';
const WAIT = { timeout: 15_000 };
const WIDTH = 1400;
const SHOT = {
  artifact: fileURLToPath(new URL('../artifacts/inspector-1400.png', import.meta.url)),
  docs: fileURLToPath(new URL('../../docs/images/inspector-1400.png', import.meta.url)),
};

const tmp = tempDir();
let engine: Engine;
let inspector: Inspector;
let browser: Browser;

test.before(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: install it with \`apt-get install -y chromium\`, or point SESSIOND_CHROMIUM at a Chromium binary.`,
    );
  }
  engine = await openEngine({ file: tmp.file('legible.db'), runner: echoRunner({ steps: 1 }) });
  await engine.admit('ses_support-ticket-4711', { prompt: 'where is my parcel?', tags: { customer: 'acme-industries', tier: 'gold', region: 'eu-west-1' } });
  await engine.admit('ses_billing-question', { prompt: 'why two charges?', tags: { customer: 'globex-corporation', channel: 'email' } });
  await engine.admit('ses_quiet', { prompt: 'hello' });
  for (const id of ['ses_support-ticket-4711', 'ses_billing-question', 'ses_quiet']) await engine.awaitIdle(id);
  await engine.fork('ses_support-ticket-4711', 'ses_support-ticket-4711-retry', { tags: { experiment: 'shorter-answers' } });
  inspector = await startInspector({ log: engine.log, port: 0, sessions: engine });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
});

test.after(async () => {
  await browser?.close();
  await inspector?.close();
  await engine?.close();
  tmp.remove();
});

/** Every text of the chart: its font size as drawn on screen (the SVG's scale applied) and its text. */
const chartLabels = (page: Page) =>
  page.$$eval('#chart svg text', (texts) =>
    texts.map((t) => {
      const ctm = (t as SVGTextElement).getScreenCTM()!;
      return { text: t.textContent ?? '', px: Number.parseFloat(t.getAttribute('font-size') ?? '0') * Math.hypot(ctm.a, ctm.b) };
    }),
  );

async function open(page: Page, commands: boolean): Promise<void> {
  await page.goto(`${inspector.url}#/session/ses_support-ticket-4711`);
  await page.waitForSelector('#chart svg g.current', WAIT);
  await page.waitForSelector('[data-testid="session-row"][data-session-id="ses_support-ticket-4711-retry"]', WAIT);
  if (commands) {
    await page.click('#chart-commands');
    await page.waitForSelector('#chart svg g.commands', WAIT);
  }
}

test('legibility - at 1400 px every label of the state chart reads at 11 px or more, the whole chart in view', async () => {
  const page = await browser.newPage({ viewport: { width: WIDTH, height: 1000 } });
  await open(page, false);
  const labels = await chartLabels(page);
  assert.ok(labels.length > 15, 'states, moves, title and legend');
  const small = labels.filter((l) => l.px < 11);
  assert.equal(small, [], `labels under 11 px: ${small.map((l) => `${l.text} ${l.px.toFixed(1)} px`).join(', ')}`);
  const figure = await page.$eval('#chart', (f) => ({ scroll: f.scrollWidth, width: f.clientWidth, scrollH: f.scrollHeight, height: f.clientHeight }));
  assert.ok(figure.scroll <= figure.width && figure.scrollH <= figure.height, `the chart fits its figure unscrolled (${JSON.stringify(figure)})`);
  mkdirSync(dirname(SHOT.artifact), { recursive: true });
  await page.screenshot({ path: SHOT.artifact });
  if (process.env.SESSIOND_UPDATE_DOCS === '1') copyFileSync(SHOT.artifact, SHOT.docs);
  await page.close();
});

test('legibility - the chart with commands and refusals keeps its labels at 11 px or more (its figure scrolls)', async () => {
  const page = await browser.newPage({ viewport: { width: WIDTH, height: 1000 } });
  await open(page, true);
  const small = (await chartLabels(page)).filter((l) => l.px < 11);
  assert.equal(small, [], `labels under 11 px: ${small.map((l) => `${l.text} ${l.px.toFixed(1)} px`).join(', ')}`);
  await page.close();
});

test("legibility - at 1400 px the session list's Tags column lies inside its panel, every tag inside the column", async () => {
  const page = await browser.newPage({ viewport: { width: WIDTH, height: 1000 } });
  await open(page, false);
  const boxes = await page.evaluate(() => {
    const panel = document.querySelector('#sessions-panel')!.getBoundingClientRect();
    const header = [...document.querySelectorAll('#sessions thead th')].at(-1)!;
    const cells = [...document.querySelectorAll('#sessions [data-testid="session-tags"]')].map((td) => ({
      right: td.getBoundingClientRect().right,
      spans: [...td.querySelectorAll('span')].map((s) => s.getBoundingClientRect().right),
      overflow: td.scrollWidth - td.clientWidth,
      text: td.textContent,
    }));
    return { panelRight: panel.right, header: header.textContent, headerRight: header.getBoundingClientRect().right, cells };
  });
  assert.is(boxes.header, 'Tags');
  assert.ok(boxes.headerRight <= boxes.panelRight, `the Tags header ends inside the panel (${boxes.headerRight} > ${boxes.panelRight})`);
  assert.is(boxes.cells.length, 4);
  const acme = boxes.cells.find((c) => c.text?.includes('customer=acme-industries'));
  assert.ok(acme, 'the tags are shown');
  for (const c of boxes.cells) {
    assert.ok(c.right <= boxes.panelRight, `a Tags cell ends inside the panel (${c.text}: ${c.right} > ${boxes.panelRight})`);
    assert.ok(c.overflow <= 0, `its text stays inside the cell (${c.text}: ${c.overflow} px over)`);
    for (const right of c.spans) assert.ok(right <= c.right, `each tag ends inside its cell (${c.text})`);
  }
  await page.close();
});

test.run();
