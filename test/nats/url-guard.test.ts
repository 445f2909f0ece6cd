/**
 * URLs in prompts over NATS, as real processes: a `sessiond start --nats` worker (the openai runner
 * against the local fake model server) refuses `sessiond prompt --nats --image` naming a loopback or
 * metadata address, saying why; neither the fake model server nor the local HTTP server the URL
 * names sees a request for it. A plain prompt still runs.
 */
import * as assert from 'uvu/assert';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { as, cliSuite, natsWorker } from './cli-suite.ts';
import { CLIENT } from '../../src/testing/nats-server.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../src/testing/fake-openai.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { runCli } from '../support/cli.ts';

const s = cliSuite('URLs in prompts over NATS');

let model: FakeOpenAI;
let local: Server;
const hits: string[] = [];
s.before(async () => {
  model = await startFakeOpenAI();
  local = createServer((req, res) => {
    hits.push(req.url ?? '');
    res.end('secret');
  });
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
});
s.after(async () => {
  await model?.close();
  await new Promise<void>((resolve) => (local ? local.close(() => resolve()) : resolve()));
});

const chats = () => model.requests.filter((r) => r.path.endsWith('/chat/completions'));

s('a NATS worker refuses prompts naming internal URLs at admission; no server sees a request', async (ctx) => {
  await natsWorker(ctx, 'url-worker.db', 0, ['--runner', 'openai', '--model', 'fake-model', '--base-url', model.url]);
  const port = (local.address() as AddressInfo).port;
  const where = ['--nats', ctx.server.url, ...as(CLIENT)];
  for (const [url, says] of [
    [`http://127.0.0.1:${port}/cat.png`, 'is http: a URL in a prompt must be https'],
    [`https://127.0.0.1:${port}/cat.png`, 'host 127.0.0.1 is in the loopback range 127.0.0.0/8'],
    ['https://169.254.169.254/latest/meta-data/x.png', 'metadata range 169.254.169.254/32'],
  ] as const) {
    const r = await runCli(['prompt', 'ses_url_nats', 'look', '--image', url, ...where]);
    assert.is(r.code, 2, `${url}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, says, url);
  }
  const ok = await runCli(['prompt', 'ses_url_nats', 'just words', ...where]);
  assert.is(ok.code, 0, ok.stdout + ok.stderr);
  await waitFor(() => chats().length >= 1, { timeoutMs: 20_000, what: 'the model request of the plain prompt' });
  assert.is(chats().length, 1, 'one model request: the plain prompt');
  assert.not.match(JSON.stringify(chats()[0]!.chat), '127.0.0.1');
  assert.not.match(JSON.stringify(chats()[0]!.chat), '169.254');
  assert.equal(hits, [], 'the local server saw no request');
});

s.run();
