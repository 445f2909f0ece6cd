/**
 * `sessiond serve --http --nats` as real processes: the gateway alone in front of a NATS worker, as
 * the client user, with a tokens file. A prompt over HTTP runs on the worker and its deltas reach the
 * stream through the NATS live subjects; a token reaches only its sessions; a body over the limit is
 * 413; the gateway process is killed and started again, and a client resuming with Last-Event-ID
 * gets exactly what it missed. Worker flags are refused, and tokens are checked before it serves.
 */
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { as, cliSuite, natsWorker } from '../nats/cli-suite.ts';
import { CLIENT } from '../../src/testing/nats-server.ts';
import { stablePort } from '../../src/testing/nats-server.ts';
import { runCli, startCli, type LongRunning } from '../support/cli.ts';
import { readSse } from '../support/sse.ts';

const WEB = 'web-token-0123456789abcdef';
const s = cliSuite('sessiond serve --nats: the gateway in front of NATS workers');

s('auth, deltas from the worker, limits, and a resume across a gateway restart', async (ctx) => {
  await natsWorker(ctx, 'gw-worker.db', 300);
  const tokens = ctx.tmp.file('tokens.json');
  writeFileSync(tokens, JSON.stringify({ tokens: [{ name: 'web', token: WEB, sessions: 'ses_web_' }] }));
  const port = await stablePort();
  const serve = (): LongRunning => {
    const g = startCli(['serve', '--http', String(port), '--nats', ctx.server.url, ...as(CLIENT), '--tokens', tokens, '--max-body-bytes', '4096']);
    ctx.workers.push(g);
    return g;
  };
  let gateway = serve();
  await gateway.waitFor('gateway: http://127.0.0.1:');
  assert.match(gateway.output(), 'it takes no work');
  assert.match(gateway.output(), '1 token from');
  const base = `http://127.0.0.1:${port}`;
  const post = (path: string, body: unknown, token = WEB) =>
    fetch(base + path, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

  assert.is((await fetch(`${base}/v1/sessions/ses_web_1`)).status, 401);
  assert.is((await post('/v1/sessions/ses_other/inputs', { prompt: 'x' })).status, 404);
  const big = await post('/v1/sessions/ses_web_1/inputs', { prompt: 'x'.repeat(5000) });
  assert.is(big.status, 413);
  assert.is(((await big.json()) as { error: { code: string } }).error.code, 'payload_too_large');

  const stream = await readSse(`${base}/v1/sessions/ses_web_1/events?access_token=${WEB}`);
  const admitted = await post('/v1/sessions/ses_web_1/inputs', { prompt: 'over the wire' });
  assert.is(admitted.status, 200, await admitted.clone().text());
  await stream.next((f) => f.json?.type === 'execution.settled', 30_000);
  stream.close();
  const deltas = stream.frames.filter((f) => f.json?.type === 'text.delta');
  assert.ok(deltas.length > 0, 'deltas came through the NATS live subjects');
  const ids = stream.frames.filter((f) => f.id !== undefined).map((f) => Number(f.id));
  assert.equal(
    ids,
    ids.map((_, i) => i + 1),
    'committed events 1..N, each once',
  );
  const other = await fetch(`${base}/v1/sessions/ses_web_1`, { headers: { authorization: 'Bearer nobody-knows-this-token' } });
  assert.is(other.status, 401);

  // the gateway dies; the session goes on; a client resumes after what it had
  gateway.child.kill('SIGKILL');
  await gateway.exited;
  const resumeAfter = ids.at(-1)!;
  const sent = await runCli(['prompt', 'ses_web_1', 'while the gateway was down', '--nats', ctx.server.url, ...as(CLIENT)]);
  assert.is(sent.code, 0, sent.stderr);
  gateway = serve();
  await gateway.waitFor('gateway: http://127.0.0.1:');
  const resumed = await readSse(`${base}/v1/sessions/ses_web_1/events`, { headers: { authorization: `Bearer ${WEB}`, 'last-event-id': String(resumeAfter) } });
  await resumed.next((f) => f.json?.type === 'execution.settled', 30_000);
  const got = resumed.frames.filter((f) => f.id !== undefined).map((f) => Number(f.id));
  assert.is(got[0], resumeAfter + 1, 'starts right after the last event it had');
  assert.equal(
    got,
    got.map((_, i) => resumeAfter + 1 + i),
    'nothing missed, nothing twice',
  );
  assert.ok(
    resumed.frames.some((f) => f.json?.type === 'input.admitted' && JSON.stringify(f.json).includes('while the gateway was down')),
    'the prompt sent meanwhile is there',
  );
  resumed.close();
  gateway.child.kill('SIGTERM');
  assert.is(await gateway.exited, 0);
});

s('serve --nats refuses worker flags, and a bad tokens file before serving', async (ctx) => {
  const flags = await runCli(['serve', '--http', '0', '--nats', ctx.server.url, ...as(CLIENT), '--runner', 'openai']);
  assert.is(flags.code, 2, flags.stderr);
  assert.match(flags.stderr, 'worker flags do not apply');
  // every worker flag, not a list of a few: a lease, a sweep, a database, a model are the workers'
  const more = await runCli([
    'serve',
    '--http',
    '0',
    '--nats',
    ctx.server.url,
    ...as(CLIENT),
    '--lease-ms',
    '5000',
    '--sweep-ms',
    '100',
    '--db',
    'x.db',
    '--model',
    'm',
  ]);
  assert.is(more.code, 2, more.stderr);
  assert.match(more.stderr, '--db, --model, --lease-ms, --sweep-ms: worker flags do not apply to sessiond serve --nats');
  const bad = ctx.tmp.file('bad-tokens.json');
  writeFileSync(bad, JSON.stringify({ tokens: [{ name: 'x', token: 'short', sessions: '*' }] }));
  const refused = await runCli(['serve', '--http', '0', '--nats', ctx.server.url, ...as(CLIENT), '--tokens', bad]);
  assert.is.not(refused.code, 0);
  assert.match(refused.stderr, 'shorter than 16 characters');
  const open = await runCli(['serve', '--http', '0', '--http-host', '0.0.0.0', '--db', ctx.tmp.file('x.db')]);
  assert.is.not(open.code, 0);
  assert.match(open.stderr, 'without tokens');
});

s.run();
