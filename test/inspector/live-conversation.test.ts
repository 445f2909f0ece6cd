/**
 * The inspector shows an answer while it streams: over an engine's live bus (what `sessiond start
 * --inspect` passes), the text deltas of the shown session appear under its conversation before
 * anything of them is committed, and the committed text replaces them. In real Chromium.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chromium } from 'playwright-core';
import { openEngine } from '../../src/engine.ts';
import type { RunContext } from '../../src/runner/types.ts';
import { startInspector } from '../../src/inspector/server.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../../src/testing/wait.ts';

const CHROMIUM = process.env.SESSIOND_CHROMIUM ?? '/usr/bin/chromium';
const WAIT = { timeout: 15_000 };

test('inspector - the shown session streams its answer live under the conversation, then the committed text replaces it', async () => {
  const tmp = tempDir();
  let release: (() => void) | undefined;
  const runner = async (ctx: RunContext) => {
    const prompt = ctx.inputs.map((i) => i.prompt).join(' ');
    const { messageId } = await ctx.startStep();
    const partId = `prt_${messageId.slice(4)}`;
    for (const w of `streaming: ${prompt}`.split(/(?<= )/)) ctx.delta(messageId, partId, w);
    if (prompt.includes('hold')) await new Promise<void>((r) => (release = r));
    await ctx.text(messageId, `answer: ${prompt}`, partId);
    await ctx.endStep(messageId);
  };
  const engine = await openEngine({ file: tmp.file('live.db'), runner });
  const inspector = await startInspector({ log: engine.log, sessions: engine, live: (onEvent) => engine.subscribe({}, onEvent), port: 0 });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  try {
    await engine.admit('ses_live', { prompt: 'first' });
    await engine.awaitIdle('ses_live');
    const page = await browser.newPage();
    await page.goto(`${inspector.url}#/session/ses_live`);
    await page.waitForFunction(() => document.querySelector('[data-testid="conversation-entries"]')?.textContent?.includes('answer: first'), undefined, WAIT);
    await engine.admit('ses_live', { prompt: 'hold on' });
    await waitFor(() => release !== undefined, { what: 'the turn to hold' });
    await page.waitForFunction(() => document.querySelector('[data-testid="conv-live-text"]')?.textContent === 'streaming: hold on', undefined, WAIT);
    const log = await engine.log.readSession('ses_live');
    assert.not.ok(
      log.some((e) => e.type === 'text.completed' && JSON.stringify(e.payload).includes('hold on')),
      'shown before its text is committed',
    );
    release!();
    await engine.awaitIdle('ses_live');
    await page.waitForFunction(() => document.querySelector('[data-testid="conversation-entries"]')?.textContent?.includes('answer: hold on'), undefined, WAIT);
    await page.waitForFunction(() => (document.querySelector('[data-testid="conversation-live"]') as HTMLElement | null)?.hidden === true, undefined, WAIT);
  } finally {
    await browser.close();
    await inspector.close();
    await engine.close();
    tmp.remove();
  }
});

test('inspector - a running tool call shows its progress live under the conversation; its result ends it', async () => {
  const tmp = tempDir();
  let release: (() => void) | undefined;
  const runner = async (ctx: RunContext) => {
    const { messageId } = await ctx.startStep();
    const hold = ctx.inputs.some((i) => i.prompt.includes('hold'));
    await ctx.tool(messageId, { name: 'crawl', input: {}, callId: hold ? 'call_crawl' : 'call_first' }, async (tc) => {
      if (hold) {
        tc.progress({ progress: 3, total: 10, message: 'page 3' });
        await new Promise<void>((r) => (release = r));
      }
      return 'crawled';
    });
    await ctx.endStep(messageId);
  };
  const engine = await openEngine({ file: tmp.file('progress.db'), runner });
  const inspector = await startInspector({ log: engine.log, sessions: engine, live: (onEvent) => engine.subscribe({}, onEvent), port: 0 });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  try {
    const page = await browser.newPage();
    await engine.admit('ses_prog', { prompt: 'first' });
    await engine.awaitIdle('ses_prog');
    await page.goto(`${inspector.url}#/session/ses_prog`);
    await page.waitForFunction(() => document.querySelector('[data-testid="conversation-entries"]')?.textContent?.includes('first'), undefined, WAIT);
    await engine.admit('ses_prog', { prompt: 'hold on' });
    await waitFor(() => release !== undefined, { what: 'the tool to hold' });
    await page.waitForFunction(
      () => document.querySelector('[data-testid="conv-live-progress"]')?.textContent === 'call_crawl: 3 of 10 (page 3)',
      undefined,
      WAIT,
    );
    release!();
    await engine.awaitIdle('ses_prog');
    await page.waitForFunction(() => document.querySelector('[data-testid="conv-live-progress"]') === null, undefined, WAIT);
  } finally {
    await browser.close();
    await inspector.close();
    await engine.close();
    tmp.remove();
  }
});

test.run();
