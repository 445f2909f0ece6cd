// A nats-server that runs without JetStream: `sessiond setup` and a worker refuse it at once, saying
// what is missing and how to turn it on (before, setup asked again for a minute, as if a cluster were
// electing its JetStream leader, and the worker said only "jetstream is not enabled").
import { readFileSync, writeFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ADMIN, REPO_NATS_CONF, WORKER, startNatsServer, type NatsServer } from '../../src/testing/nats-server.ts';
import { runCli } from '../support/cli.ts';
import { tempDir } from '../support/tmp.ts';

const s = suite<{ server: NatsServer; tmp: ReturnType<typeof tempDir> }>('a server without JetStream');
/** Well under setup's minute of asking again: the old setup was still asking when this ended it. */
const REFUSED_WITHIN_MS = 30_000;

s.before(async (ctx) => {
  ctx.tmp = tempDir('sessiond-no-js-');
  // the project's nats.conf (its users and permissions) without the jetstream block
  const conf = readFileSync(REPO_NATS_CONF, 'utf8').replace(/\njetstream \{[\s\S]*?\n\}\n/, '\n');
  assert.not.match(conf, /^jetstream/m, 'the jetstream block is gone');
  const file = ctx.tmp.file('nats-no-js.conf');
  writeFileSync(file, conf);
  ctx.server = await startNatsServer({ config: file, streams: false });
});

s.after(async (ctx) => {
  await ctx.server?.dispose();
  ctx.tmp?.remove();
});

const refusal = (stderr: string, port: number) => {
  assert.match(stderr, `nats-server 127.0.0.1:${port}`);
  assert.match(stderr, 'runs without JetStream');
  assert.match(stderr, '`nats-server -js`');
};

s('sessiond setup refuses it at once, saying how to turn JetStream on', async ({ server }) => {
  const r = await runCli(['setup', '--nats', server.url, '--nats-user', ADMIN.user, '--nats-pass', ADMIN.pass], { timeoutMs: REFUSED_WITHIN_MS });
  assert.is(r.code, 69, r.stdout + r.stderr);
  refusal(r.stderr, server.port);
  assert.not.match(r.stdout, 'ready');
});

s('a worker refuses it at once, with the same words', async ({ server, tmp }) => {
  const r = await runCli(['start', '--nats', server.url, '--nats-user', WORKER.user, '--nats-pass', WORKER.pass, '--db', tmp.file('worker.db')], {
    timeoutMs: REFUSED_WITHIN_MS,
  });
  assert.is(r.code, 69, r.stdout + r.stderr);
  refusal(r.stderr, server.port);
});

s.run();
