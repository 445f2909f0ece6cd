/**
 * The inspector over an engine (`sessions`): the session list pages through `list` with its filters
 * (state, waiting, tag) and a "more" cursor, and "fork here" forks the session at the travelled
 * sequence; over HTTP and in a real browser (Chromium through playwright-core). Without `sessions`
 * the inspector stays read-only and refuses filters and forks, saying how to get them.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chromium, type Page } from 'playwright-core';
import { openEngine, type Engine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { startInspector, type Inspector } from '../../src/inspector/server.ts';
import { tempDir } from '../support/tmp.ts';

const CHROMIUM = process.env.SESSIOND_CHROMIUM ?? '/usr/bin/chromium';
const WAIT = { timeout: 15_000 };
const tmp = tempDir();
let engine: Engine;
let inspector: Inspector;
let readOnly: Inspector;

test.before(async () => {
  engine = await openEngine({ file: tmp.file('inspect.db'), runner: echoRunner({ steps: 1 }) });
  for (const [id, tier] of [
    ['ses_a', 'gold'],
    ['ses_b', 'free'],
    ['ses_c', 'gold'],
  ] as const) {
    await engine.admit(id, { prompt: `hello ${id}`, tags: { tier } });
    await engine.awaitIdle(id);
  }
  await engine.admit('ses_c', { prompt: 'later', wake: false });
  inspector = await startInspector({ log: engine.log, port: 0, sessions: engine });
  readOnly = await startInspector({ log: engine.log, port: 0 });
});

test.after(async () => {
  await inspector?.close();
  await readOnly?.close();
  await engine?.close();
  tmp.remove();
});

async function call<T = Record<string, unknown>>(base: Inspector, path: string, init?: RequestInit): Promise<{ status: number; body: T }> {
  const res = await fetch(new URL(path, base.url), init);
  return { status: res.status, body: (await res.json()) as T };
}
const post = (base: Inspector, path: string, body: unknown) =>
  call(base, path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
type Listed = { listed: boolean; next: string | null; sessions: { sessionId: string; tags: Record<string, string>; pending: number }[] };

test('inspector list - filters by tag, state and waiting, pages with a cursor, bad filters are 400', async () => {
  const ids = async (q: string) => (await call<Listed>(inspector, `/api/sessions${q}`)).body.sessions.map((s) => s.sessionId);
  assert.equal(await ids(''), ['ses_c', 'ses_b', 'ses_a'], 'newest first');
  assert.equal(await ids('?tag=tier=gold'), ['ses_c', 'ses_a']);
  assert.equal(await ids('?state=settled&tag=tier=free'), ['ses_b']);
  assert.equal(await ids('?state=running'), []);
  const first = await call<Listed>(inspector, '/api/sessions?limit=2');
  assert.equal([first.body.listed, first.body.sessions.length, typeof first.body.next], [true, 2, 'string']);
  assert.equal(await ids(`?limit=2&after=${first.body.next}`), ['ses_a']);
  assert.equal(first.body.sessions[0]!.tags, { tier: 'gold' });
  assert.is(first.body.sessions[0]!.pending, 1, 'ses_c has a prompt waiting');
  const bad = await call<{ error: { message: string } }>(inspector, '/api/sessions?state=asleep');
  assert.is(bad.status, 400);
  assert.match(bad.body.error.message, 'state must be one of');
  assert.equal(await ids('?prefix=ses_b'), ['ses_b'], 'by id prefix');
  const badPrefix = await call<{ error: { message: string } }>(inspector, '/api/sessions?prefix=a%20b');
  assert.is(badPrefix.status, 400);
  assert.match(badPrefix.body.error.message, 'idPrefix must be the start of a session id');
  const notKv = await call<{ error: { message: string } }>(inspector, '/api/sessions?tag=tier');
  assert.is(notKv.status, 400);
  const plain = await call<{ error: { message: string } }>(readOnly, '/api/sessions?state=idle');
  assert.is(plain.status, 400);
  assert.match(plain.body.error.message, 'start it with sessiond start --inspect');
});

test('inspector fork - POST /api/sessions/:id/fork forks at a settled sequence; inside a turn 409 naming the nearest; read-only 405', async () => {
  const head = (await engine.status('ses_a')).seq;
  const made = await post(inspector, '/api/sessions/ses_a/fork', { sessionId: 'ses_a_http', at: head });
  assert.is(made.status, 200);
  assert.equal(made.body, { sessionId: 'ses_a_http', from: { sessionId: 'ses_a', seq: head }, seq: 1, created: true, items: 2 });
  const inside = await post(inspector, '/api/sessions/ses_a/fork', { sessionId: 'ses_a_mid', at: 2 });
  assert.is(inside.status, 409);
  assert.match((inside.body as { error: { message: string } }).error.message, `Fork at 1 or ${head}`);
  assert.is((await post(inspector, '/api/sessions/ses_a/fork', { at: head })).status, 400, 'no new session id');
  assert.is((await post(inspector, '/api/sessions/ses_nobody/fork', { sessionId: 'ses_x' })).status, 404);
  assert.is((await post(readOnly, '/api/sessions/ses_a/fork', { sessionId: 'ses_y' })).status, 405);
  assert.is((await call(inspector, '/api/sessions/ses_a/fork')).status, 405, 'GET is not a fork');
});

async function textMatches(page: Page, selector: string, pattern: string): Promise<void> {
  await page.waitForFunction(([sel, want]) => (document.querySelector(sel!)?.textContent ?? '').includes(want!), [selector, pattern] as const, WAIT);
}

test('inspector page - the list filtered by tag, then "fork here" at a travelled sequence, and the fork opened', async () => {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  try {
    const page = await browser.newPage();
    await page.goto(inspector.url);
    await page.waitForSelector('[data-testid="session-row"][data-session-id="ses_b"]', WAIT);
    await page.fill('[data-testid="list-tag"]', 'tier=gold');
    await page.click('[data-testid="list-apply"]');
    await page.waitForFunction(() => !document.querySelector('[data-session-id="ses_b"]'), undefined, WAIT);
    const rows = await page.$$eval('[data-testid="session-row"]', (trs) => trs.map((tr) => tr.getAttribute('data-session-id')));
    assert.equal(rows, ['ses_c', 'ses_a'], 'only the gold sessions');
    await textMatches(page, '[data-session-id="ses_a"] [data-testid="session-tags"]', 'tier=gold');
    await page.fill('[data-testid="list-prefix"]', 'ses_a');
    await page.click('[data-testid="list-apply"]');
    await page.waitForFunction(() => !document.querySelector('[data-session-id="ses_c"]'), undefined, WAIT);
    assert.equal(
      await page.$$eval('[data-testid="session-row"]', (trs) => trs.map((tr) => tr.getAttribute('data-session-id'))),
      ['ses_a'],
      'gold, and an id starting with ses_a',
    );
    const head = (await engine.status('ses_a')).seq;
    await page.goto(`${inspector.url}#/session/ses_a/at/${head}`);
    await textMatches(page, '[data-testid="at-seq"]', String(head));
    await page.fill('[data-testid="fork-id"]', 'ses_a_page');
    await page.click('[data-testid="fork-here"]');
    await textMatches(page, '[data-testid="fork-result"]', `forked into ses_a_page at sequence ${head}`);
    assert.equal((await engine.status('ses_a_page')).forkedFrom, { sessionId: 'ses_a', seq: head });
    // travelling into the turn, the fork is refused with the nearest settled sequences
    await page.goto(`${inspector.url}#/session/ses_a/at/2`);
    await textMatches(page, '[data-testid="at-seq"]', '2');
    await page.fill('[data-testid="fork-id"]', 'ses_a_mid');
    await page.click('[data-testid="fork-here"]');
    await textMatches(page, '[data-testid="fork-error"]', 'is inside a turn');
    await page.goto(`${inspector.url}#/session/ses_a_page`);
    await textMatches(page, '[data-testid="session-id"]', 'ses_a_page');
  } finally {
    await browser.close();
  }
});

test('inspector page - a prompt of parts reads one line per part in the inputs: text, image by URL and by bytes, a named file, JSON', async () => {
  const png = Buffer.alloc(3000, 7).toString('base64');
  await engine.admit('ses_parts', {
    prompt: [
      { type: 'text', text: 'What is on this chart?' },
      { type: 'image', url: 'https://203.0.113.10/chart.png' },
      { type: 'image', data: png, mediaType: 'image/png' },
      { type: 'file', data: Buffer.from('%PDF-1.4').toString('base64'), mediaType: 'application/pdf', filename: 'report.pdf' },
      { type: 'json', value: { quarter: 'Q3', regions: ['eu', 'us'] } },
    ],
  });
  await engine.awaitIdle('ses_parts');
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  try {
    const page = await browser.newPage();
    await page.goto(`${inspector.url}#/session/ses_parts`);
    await page.waitForSelector('[data-testid="rows-inputs"] [data-testid="prompt-parts"] li', WAIT);
    const lines = await page.$$eval('[data-testid="rows-inputs"] [data-testid="prompt-parts"] li', (lis) =>
      lis.map((li) => [li.getAttribute('data-part'), li.textContent]),
    );
    assert.equal(lines, [
      ['text', 'text: What is on this chart?'],
      ['image', 'image (https://203.0.113.10/chart.png)'],
      ['image', 'image (image/png, 2.9 KiB)'],
      ['file', 'file report.pdf (application/pdf, 0 KiB)'],
      ['json', 'json: {"quarter":"Q3","regions":["eu","us"]}'],
    ]);
    const table = await page.$eval('[data-testid="rows-inputs"]', (t) => t.outerHTML);
    assert.not.ok(table.includes(png.slice(0, 200)), 'the bytes are not inlined in the inputs table');
    assert.match(table, 'What is on this chart?', 'the prompt column keeps the text form');
  } finally {
    await browser.close();
  }
});

test.run();
