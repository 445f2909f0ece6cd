/**
 * The conversation view in a real browser (Chromium through playwright-core), beside the chart and
 * the timeline: at the head of a session the model runner ran (a prompt of parts with an image, a
 * tool call with its input, output and duration, an approval waited for and approved, reasoning,
 * the answer), while travelling in time (the call awaiting its approval, nothing after it shown
 * yet), following live again; the lease panel saying what ended each turn (succeeded, waiting,
 * handed back); large text saying how much was cut; no bytes on the page. Screenshots are kept in
 * test/artifacts/ and copied to docs/ for docs/inspector.md when SESSIOND_UPDATE_DOCS=1.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { z } from 'zod';
import { openEngine, type Engine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { openaiRunner } from '../../src/runner/model/openai.ts';
import { defineTool } from '../../src/runner/model/tools.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../src/testing/fake-openai.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { startInspector, type Inspector } from '../../src/inspector/server.ts';
import { TEXT_SHOWN } from '../../src/inspector/bounded.ts';
import { tempDir } from '../support/tmp.ts';

const CHROMIUM = process.env.SESSIOND_CHROMIUM ?? '/usr/bin/chromium';
const WAIT = { timeout: 15_000 };
const shot = (name: string) => ({
  artifact: fileURLToPath(new URL(`../artifacts/${name}`, import.meta.url)),
  docs: fileURLToPath(new URL(`../../docs/${name}`, import.meta.url)),
});
const HEAD_SHOT = shot('inspector-conversation.png');
const TRAVEL_SHOT = shot('inspector-conversation-travel.png');
const SESSION = 'ses_weather';
const png = Buffer.alloc(3000, 7).toString('base64');

const tmp = tempDir();
let model: FakeOpenAI;
let engine: Engine;
let inspector: Inspector;
let browser: Browser;

test.before(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: install it with \`apt-get install -y chromium\`, or point SESSIOND_CHROMIUM at a Chromium binary.`,
    );
  }
  model = await startFakeOpenAI({ apiKey: 'sk-test' });
  model.script(
    { kind: 'toolCalls', calls: [{ id: 'call_weather', name: 'weather', arguments: { city: 'Oslo' } }] },
    { kind: 'toolCalls', calls: [{ id: 'call_mail', name: 'send_mail', arguments: { to: 'bob@example.com', body: 'Wear a warm coat.' } }] },
    { kind: 'text', reasoning: 'Bob has the advice; now answer the question.', text: 'Wear a warm coat: it is 3 °C and raining in Oslo. I mailed Bob.' },
  );
  const tools = {
    weather: defineTool({
      description: 'The weather in a city',
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => ({ city, tempC: 3, sky: 'rain' }),
    }),
    send_mail: defineTool({
      description: 'Send an email',
      inputSchema: z.object({ to: z.string(), body: z.string() }),
      durable: true,
      needsApproval: true,
      execute: async ({ to }) => `sent to ${to}`,
    }),
  };
  const file = tmp.file('conversation.db');
  engine = await openEngine({ file, runner: openaiRunner({ model: 'm', baseURL: model.url, apiKey: 'sk-test', tools }) });
  await engine.admit(SESSION, {
    prompt: [
      { type: 'text', text: 'What should I wear in Oslo today? Then mail Bob.' },
      { type: 'image', data: png, mediaType: 'image/png' },
    ],
  });
  await engine.awaitIdle(SESSION);
  await engine.approve(SESSION, 'call_mail', { reason: 'looks right', actor: 'alice' });
  await engine.awaitIdle(SESSION);
  // a long prompt (the fake model, its script used up, echoes it back)
  await engine.admit('ses_long', { prompt: 'y'.repeat(TEXT_SHOWN + 1000) });
  await engine.awaitIdle('ses_long');
  // a turn handed back by a worker shutting down, on the same file
  const other = await openEngine({ file, runner: echoRunner({ steps: 1, delayMs: 60_000 }) });
  await other.admit('ses_handback', { prompt: 'a long turn' });
  await waitFor(async () => (await other.log.readSession('ses_handback')).some((e) => e.type === 'step.started'), { what: 'the turn to run' });
  await other.close();
  inspector = await startInspector({ log: engine.log, port: 0 });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
});

test.after(async () => {
  await browser?.close();
  await inspector?.close();
  await engine?.close();
  await model?.close();
  tmp.remove();
});

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
const texts = (page: Page, selector: string) => page.$$eval(selector, (els) => els.map((el) => (el.textContent ?? '').trim()));
const keep = async (page: Page, where: { artifact: string; docs: string }) => {
  mkdirSync(dirname(where.artifact), { recursive: true });
  await page.screenshot({ path: where.artifact, fullPage: true });
  if (process.env.SESSIOND_UPDATE_DOCS === '1') copyFileSync(where.artifact, where.docs);
};

test('conversation page - at the head: the prompt of parts, the tool calls with their input, output and duration, the approval, reasoning, the answer', async () => {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  const events = await engine.log.readSession(SESSION);
  await page.goto(`${inspector.url}#/session/${SESSION}`);
  await textIs(page, '#conversation-seq', String(events.length));
  const kinds = await page.$$eval('#conversation-entries > [data-testid="conv-entry"]', (lis) => lis.map((li) => li.getAttribute('data-kind')));
  assert.equal(kinds, ['turn', 'prompt', 'step', 'step', 'turn', 'prompt', 'step']);
  assert.equal(await texts(page, '[data-testid="conv-parts"] li'), ['What should I wear in Oslo today? Then mail Bob.', 'image (image/png, 2.9 KiB)']);

  const weather = page.locator('[data-testid="conv-tool"][data-call="call_weather"]');
  assert.is(await weather.getAttribute('data-state'), 'succeeded');
  assert.is(await weather.locator('[data-testid="conv-tool-input"]').textContent(), '{"city":"Oslo"}');
  assert.is(await weather.locator('[data-testid="conv-tool-output"]').textContent(), '{"city":"Oslo","tempC":3,"sky":"rain"}');
  assert.match((await weather.locator('[data-testid="conv-tool-duration"]').textContent()) ?? '', /^in \d+ ms$/);

  const mail = page.locator('[data-testid="conv-tool"][data-call="call_mail"]');
  assert.is(await mail.getAttribute('data-state'), 'succeeded');
  assert.match((await mail.locator('[data-testid="conv-approval"]').textContent()) ?? '', /^approval approved by alice \("looks right"\) after \d+ ms$/);
  assert.is(await mail.locator('[data-testid="conv-tool-output"]').textContent(), '"sent to bob@example.com"');
  assert.match((await mail.textContent()) ?? '', /ran in exe_/, 'the approved call ran when the turn resumed');

  assert.equal(await texts(page, '[data-testid="conv-reasoning"]'), ['Bob has the advice; now answer the question.']);
  assert.equal((await texts(page, '[data-testid="conv-answer"]')).at(-1), 'Wear a warm coat: it is 3 °C and raining in Oslo. I mailed Bob.');
  assert.equal(await texts(page, '[data-testid="conv-turn-outcome"]').then((t) => t.map((s) => s.replace(/, after \d+(?: ms|\.\d s)$/, ''))), [
    'waiting, holding no lease for approval of send_mail',
    'succeeded',
  ]);
  assert.match((await page.locator('[data-testid="conv-continues"]').textContent()) ?? '', /^continues a turn that waited \(exe_\w+, phase unknown\)$/);
  await textIs(page, '[data-testid="lease-status"]', 'ended (succeeded)');
  assert.not.ok((await page.locator('#conversation').innerHTML()).includes(png.slice(0, 200)), 'no bytes in the conversation');
  await keep(page, HEAD_SHOT);
  assert.equal(errors, [], 'no script errors on the page');
  await page.close();
});

test('conversation page - travelling in time: the call awaits its approval and nothing after it is shown; the waiting turn; following live again', async () => {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(err.message));
  const events = await engine.log.readSession(SESSION);
  const waitSeq = events.find((e) => e.type === 'wait.started')!.seq;
  const settledWaiting = events.find((e) => e.type === 'execution.settled' && e.payload.outcome === 'waiting')!.seq;
  const weatherCalled = events.find((e) => e.type === 'tool.called' && e.payload.name === 'weather')!.seq;
  await page.goto(`${inspector.url}#/session/${SESSION}`);
  await textIs(page, '#conversation-seq', String(events.length));

  await page.click(`[data-testid="timeline-row"][data-seq="${waitSeq}"] button`);
  await textIs(page, '#conversation-seq', String(waitSeq));
  const mail = page.locator('#conversation-entries [data-testid="conv-tool"][data-call="call_mail"]');
  await textIs(page, '[data-call="call_mail"] [data-testid="conv-tool-state"]', 'awaiting approval');
  assert.match((await mail.locator('[data-testid="conv-approval"]').textContent()) ?? '', /^waits for a person since \d\d:\d\d:\d\d\.\d{3} UTC/);
  assert.is(await mail.locator('[data-testid="conv-tool-output"]').count(), 0, 'no output yet');
  assert.equal(await texts(page, '[data-testid="conv-answer"]'), [], 'the answer is not there yet');
  const current = await page.$$eval('[data-testid="conv-entry"][aria-current="true"]', (lis) => lis.map((li) => li.getAttribute('data-kind')));
  assert.equal(current, ['turn', 'step'], 'what the event at this sequence changed is marked: the turn waits, its call awaits approval');
  assert.match((await page.locator('[data-testid="lease-status"]').textContent()) ?? '', /^live \(expires in \d+\.\d s\)$/);
  await keep(page, TRAVEL_SHOT);

  await page.locator('#seq-slider').fill(String(settledWaiting));
  await textIs(page, '#conversation-seq', String(settledWaiting));
  await textIs(page, '[data-testid="lease-status"]', 'ended (waiting, holding no lease)');
  assert.match((await page.locator('[data-testid="conv-turn-outcome"]').textContent()) ?? '', /^waiting, holding no lease for approval of send_mail/);

  await page.goto(`${inspector.url}#/session/${SESSION}/at/${weatherCalled}`);
  await textIs(page, '#conversation-seq', String(weatherCalled));
  assert.match((await page.locator('[data-call="call_weather"] [data-testid="conv-tool-state"]').textContent()) ?? '', /^running/);
  assert.is(await page.locator('[data-call="call_mail"]').count(), 0, 'the later call is not there yet');

  // following live: back at the head, and a new prompt and its answer appear as they commit
  await page.click('#follow-live');
  await textIs(page, '#conversation-seq', String(events.length));
  await engine.admit(SESSION, { prompt: 'thanks!' });
  await engine.awaitIdle(SESSION);
  const last = await engine.log.lastSeq(SESSION);
  await textIs(page, '#conversation-seq', String(last));
  assert.equal((await texts(page, '[data-testid="conv-answer"]')).at(-1), 'echo: thanks!');
  assert.equal(errors, [], 'no script errors on the page');
  await page.close();
});

test('conversation page - a handed-back turn says so in the lease panel and the conversation; a long prompt says how much is cut', async () => {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  await page.goto(`${inspector.url}#/session/ses_handback`);
  await textIs(page, '[data-testid="lease-status"]', 'ended (handed back)');
  assert.match(
    (await page.locator('[data-testid="conv-turn-outcome"]').textContent()) ?? '',
    /^handed back \(its worker shut down; a continuation was admitted\)/,
  );
  await page.goto(`${inspector.url}#/session/ses_long`);
  await textIs(page, '[data-testid="lease-status"]', 'ended (succeeded)');
  const cuts = await texts(page, '#conversation-entries [data-testid="cut"]');
  assert.equal(cuts, ['\u2026 1,000 more characters not shown', '\u2026 1,006 more characters not shown'], 'the prompt, then its echo');
  const prompt = await page.locator('#conversation-entries [data-kind="prompt"] [data-testid="conv-text"]').textContent();
  assert.is(prompt, `${'y'.repeat(TEXT_SHOWN)} \u2026 1,000 more characters not shown`, 'the first TEXT_SHOWN characters, then how many more');
  await page.close();
});

test.run();
