/**
 * A long tool reports progress (`ctx.progress`): it reaches live subscribers and the gateway's
 * event stream as `tool.progressed`, at most one every 100 ms per call (the latest wins), and is
 * never stored. A progress the event cannot carry is refused to the tool, saying what it sent.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { startSessiond } from '../../src/host.ts';
import { startGateway } from '../../src/gateway/server.ts';
import { engineLive } from '../../src/gateway/live.ts';
import { openaiRunner } from '../../src/runner/model/openai.ts';
import { defineTool } from '../../src/runner/model/tools.ts';
import { startFakeOpenAI } from '../../src/testing/fake-openai.ts';
import { tempDir } from '../support/tmp.ts';
import { readSse } from '../support/sse.ts';

test('tool progress reaches the gateway stream live, throttled, the last report kept, never stored; bad progress is refused to the tool', async () => {
  const tmp = tempDir();
  const server = await startFakeOpenAI();
  let refusal = '';
  const tools = {
    crawl: defineTool({
      description: 'Crawls 50 pages',
      inputSchema: z.object({}),
      execute: async (_input, tc) => {
        try {
          tc.progress({ progress: Number.NaN });
        } catch (err) {
          refusal = (err as Error).message;
        }
        for (let page = 1; page <= 50; page++) {
          tc.progress({ progress: page, total: 50, message: `page ${page}` });
          await new Promise((r) => setTimeout(r, 5)); // the pages take 250 ms in all
        }
        return 'crawled';
      },
    }),
  };
  const sessiond = await startSessiond({ db: tmp.file('progress.db'), runner: openaiRunner({ model: 'fake-model', baseURL: server.url, tools }) });
  const gateway = await startGateway({ sessions: sessiond, live: engineLive(sessiond), port: 0 });
  try {
    server.script({ kind: 'toolCalls', calls: [{ id: 'call_crawl', name: 'crawl', arguments: {} }] }, { kind: 'text', text: 'Done.' });
    const stream = await readSse(new URL('/v1/sessions/ses_crawl/events', gateway.url).href);
    await sessiond.admit('ses_crawl', { prompt: 'crawl' });
    await stream.next((f) => f.json?.type === 'execution.settled', 10_000);
    stream.close();
    type Report = { callId: string; progress: number; total: number; message: string };
    const reports = stream.frames.filter((f) => f.json?.type === 'tool.progressed').map((f) => f.json!.payload as Report);
    assert.ok(reports.length >= 2, `some reports came: ${reports.length}`);
    assert.ok(reports.length < 50, `throttled: ${reports.length} of 50 reports went out`);
    const seen = (r: Report) => [r.callId, r.progress, r.total, r.message];
    assert.equal(seen(reports[0]!), ['call_crawl', 1, 50, 'page 1'], 'the first at once');
    assert.equal(seen(reports.at(-1)!), ['call_crawl', 50, 50, 'page 50'], 'the last before the result');
    const done = stream.frames.findIndex((f) => f.json?.type === 'tool.succeeded');
    const lastReport = stream.frames.map((f) => f.json?.type).lastIndexOf('tool.progressed');
    assert.ok(lastReport < done, 'all before the result');
    const stored = await sessiond.engine.log.readSession('ses_crawl');
    assert.not.ok(
      stored.some((e) => (e.type as string) === 'tool.progressed'),
      'never stored',
    );
    assert.match(refusal, 'Tool crawl reported progress NaN (progress must be a number >= 0)');
  } finally {
    await gateway.close();
    await sessiond.close();
    await server.close();
    tmp.remove();
  }
});

test.run();
