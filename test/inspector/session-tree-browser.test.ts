/**
 * Sessions that call sessions in the inspector, in a real browser (Chromium through playwright-core):
 * a parent's page links its children (with their states) and each child's links back to its parent;
 * the parent's conversation shows each session call with a link to the child and the child's answer.
 * The screenshot is kept in test/artifacts/ and copied to docs/images/ when SESSIOND_UPDATE_DOCS=1.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startSessiond, type Sessiond } from '../../src/host.ts';
import type { RunContext } from '../../src/runner/types.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';

const CHROMIUM = process.env.SESSIOND_CHROMIUM ?? '/usr/bin/chromium';
const WAIT = { timeout: 15_000 };
const SHOT = {
  artifact: fileURLToPath(new URL('../artifacts/inspector-session-tree.png', import.meta.url)),
  docs: fileURLToPath(new URL('../../docs/images/inspector-session-tree.png', import.meta.url)),
};

/** ses_lead calls a researcher and a reviewer at once and answers with both; each child answers its prompt (the reviewer fails). */
async function runner(ctx: RunContext): Promise<void> {
  if (ctx.sessionId === 'ses_lead') {
    const [a, b] = await Promise.all([
      ctx.callSession('research', { sessionId: 'ses_lead-research', prompt: 'find the facts' }),
      ctx.callSession('review', { sessionId: 'ses_lead-review', prompt: 'check the facts' }),
    ]);
    const { messageId } = await ctx.startStep();
    await ctx.text(messageId, `research ${a.outcome}: ${a.text} | review ${b.outcome}`);
    await ctx.endStep(messageId, 'stop');
    return;
  }
  const { messageId } = await ctx.startStep();
  if (ctx.sessionId === 'ses_lead-review') throw new Error('the reviewer is out of coffee');
  await ctx.text(messageId, `three facts for "${ctx.inputs[0]!.prompt}"`);
  await ctx.endStep(messageId, 'stop');
}

const tmp = tempDir();
let sessiond: Sessiond;
let browser: Browser;

test.before(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: install it with \`apt-get install -y chromium\`, or point SESSIOND_CHROMIUM at a Chromium binary.`,
    );
  }
  sessiond = await startSessiond({ db: tmp.file('tree.db'), runner, sweepMs: 100, inspectPort: 0 });
  await sessiond.admit('ses_lead', { prompt: 'research and review' });
  await waitFor(async () => (await sessiond.status('ses_lead')).outcome === 'succeeded', { what: 'the parent to answer', timeoutMs: 20_000 });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
});

test.after(async () => {
  await browser?.close();
  await sessiond?.close();
  tmp.remove();
});

const texts = (page: Page, selector: string) => page.$$eval(selector, (els) => els.map((el) => (el.textContent ?? '').trim()));

test("session tree - the parent links its children with their states, each child links back; the parent's conversation shows each call and the child's answer", async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  const last = await sessiond.engine.log.lastSeq('ses_lead');
  await page.goto(`${sessiond.inspectorUrl}#/session/ses_lead`);
  await page.waitForFunction((seq) => document.querySelector('#conversation-seq')?.textContent === String(seq), last, WAIT);

  assert.equal(await texts(page, '[data-testid="tree-child-link"]'), ['ses_lead-research', 'ses_lead-review']);
  assert.equal(await texts(page, '[data-testid="tree-child"] .state'), ['settled', 'settled']);
  assert.is(await page.locator('[data-testid="tree-parent"]').count(), 0, 'the parent has no parent');

  // each call in the conversation: the child linked, and its answer (or how it failed)
  const calls = page.locator('#conversation-entries [data-testid="conv-entry"][data-kind="wait"]');
  assert.is(await calls.count(), 2);
  assert.equal((await texts(page, '#conversation-entries [data-testid="conv-child-link"]')).sort(), ['ses_lead-research', 'ses_lead-review']);
  const research = calls.filter({ has: page.locator('[data-testid="conv-child-link"]', { hasText: 'ses_lead-research' }) });
  assert.is(await research.locator('[data-testid="conv-child-answer"]').getAttribute('data-outcome'), 'succeeded');
  assert.is((await research.locator('[data-testid="conv-child-text"]').textContent())?.trim(), 'three facts for "find the facts"');
  assert.match((await research.locator('[data-testid="conv-wait-outcome"]').textContent()) ?? '', /^delivered after /);
  const review = calls.filter({ has: page.locator('[data-testid="conv-child-link"]', { hasText: 'ses_lead-review' }) });
  assert.is(await review.locator('[data-testid="conv-child-answer"]').getAttribute('data-outcome'), 'failed');
  assert.match((await review.locator('[data-testid="conv-child-answer"]').textContent()) ?? '', /the reviewer is out of coffee/);
  assert.equal((await texts(page, '[data-testid="conv-answer"]')).at(-1), 'research succeeded: three facts for "find the facts" | review failed');
  mkdirSync(dirname(SHOT.artifact), { recursive: true });
  await page.screenshot({ path: SHOT.artifact, fullPage: false });
  if (process.env.SESSIOND_UPDATE_DOCS === '1') copyFileSync(SHOT.artifact, SHOT.docs);

  // a child's link opens the child, which links back to its parent
  await page.click('[data-testid="tree-child-link"]:text("ses_lead-research")');
  await page.waitForFunction(() => document.querySelector('#session-id')?.textContent === 'ses_lead-research', undefined, WAIT);
  await page.waitForSelector('[data-testid="tree-parent-link"]', WAIT);
  assert.is(await page.locator('[data-testid="tree-parent-link"]').textContent(), 'ses_lead');
  assert.is(await page.locator('[data-testid="tree-children"]').count(), 0, 'the child called no one');
  await page.click('[data-testid="tree-parent-link"]');
  await page.waitForFunction(() => document.querySelector('#session-id')?.textContent === 'ses_lead', undefined, WAIT);
  // a call from the parent's conversation opens the child too
  await page.waitForSelector('#conversation-entries [data-testid="conv-child-link"]', WAIT);
  await page.click('#conversation-entries [data-testid="conv-child-link"]:text("ses_lead-review")');
  await page.waitForFunction(() => document.querySelector('#session-id')?.textContent === 'ses_lead-review', undefined, WAIT);
  assert.equal(errors, [], 'no script errors on the page');
  await page.close();
});

test('session tree - a child called while the parent is shown joins its children live', async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await page.goto(`${sessiond.inspectorUrl}#/session/ses_lead`);
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="tree-child-link"]').length === 2, undefined, WAIT);
  await sessiond.engine.admit('ses_lead-late', { prompt: 'one more', caller: 'ses_lead', wake: false });
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="tree-child-link"]').length === 3, undefined, WAIT);
  assert.equal(await texts(page, '[data-testid="tree-child-link"]'), ['ses_lead-late', 'ses_lead-research', 'ses_lead-review']);
  await page.close();
});

test.run();
