/**
 * Event streams that never read, against real processes (`sessiond serve --http --nats` in front of
 * a `sessiond start --nats` worker): a token's streams are capped (`"limits": {"streams": N}`; one
 * more is 429 limit_exceeded naming the quota), a stream whose client does not read is cut within
 * seconds (its socket closed, its place given back), and the JetStream consumers behind the streams
 * are gone at once (the server's consumer count back to where it was), not after the inactive
 * threshold. The same embedded (`sessiond serve --http --db`: the worker cuts them itself). Before:
 * no cap, and a non-reading stream kept its buffer, socket and follow forever.
 */
import * as assert from 'uvu/assert';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { as, cliSuite, natsWorker } from '../nats/cli-suite.ts';
import { CLIENT, stablePort } from '../../src/testing/nats-server.ts';
import { SessiondClient } from '../../src/client/client.ts';
import { runCli, startCli } from '../support/cli.ts';

const WEB = 'web-token-0123456789abcdef';
const s = cliSuite('gateway streams: a cap per token, and a client that does not read is cut');

/** Polls `check` every 100 ms until it holds, failing with `what` after `ms`. */
async function until(check: () => Promise<boolean> | boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) assert.unreachable(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A client that asks for the stream, reads its status line (200: the stream is open) and then never reads again. */
function nonReading(port: number, path: string): Promise<{ socket: Socket }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${WEB}\r\n\r\n`);
    });
    socket.once('error', reject);
    socket.once('data', (chunk: Buffer) => {
      socket.pause(); // never read again: the kernel's buffers fill, then the gateway's
      const status = chunk.toString('latin1').split('\r\n')[0];
      if (status === 'HTTP/1.1 200 OK') resolve({ socket });
      else reject(new Error(`the stream was refused: ${status}`));
    });
  });
}

/** Established TCP connections from local port `port` (the gateway's side) to one of `clients` (their local ports), from /proc/net/tcp. */
function serverSide(port: number, clients: readonly Socket[]): number {
  const hex = (p: number) => p.toString(16).toUpperCase().padStart(4, '0');
  const remotes = new Set(clients.map((c) => `:${hex(c.localPort!)}`));
  return ['/proc/net/tcp', '/proc/net/tcp6']
    .filter((f) => existsSync(f))
    .flatMap((f) => readFileSync(f, 'utf8').split('\n').slice(1))
    .map((l) => l.trim().split(/\s+/))
    .filter((cols) => cols[1]?.endsWith(`:${hex(port)}`) && remotes.has(cols[2]?.slice(-5) ?? '') && cols[3] === '01').length;
}

s('streams - past the cap 429 limit_exceeded; non-reading streams are cut, their places and JetStream consumers freed at once', async (ctx) => {
  await natsWorker(ctx, 'streams-worker.db', 1);
  const tokens = ctx.tmp.file('tokens.json');
  writeFileSync(tokens, JSON.stringify({ tokens: [{ name: 'web', token: WEB, sessions: 'ses_q_', limits: { streams: 3 } }] }));
  const port = await stablePort();
  const bad = await runCli(['serve', '--http', String(port), '--nats', ctx.server.url, ...as(CLIENT), '--tokens', tokens, '--token-limit', 'stream=5']);
  assert.is(bad.code, 2, bad.stderr);
  assert.match(bad.stderr, '--token-limit has unknown limit stream (the limits: streams,');
  // the gateway's default for every token (the token's own "limits" go over it)
  const gateway = startCli(['serve', '--http', String(port), '--nats', ctx.server.url, ...as(CLIENT), '--tokens', tokens, '--token-limit', 'streams=50']);
  ctx.workers.push(gateway);
  await gateway.waitFor('gateway: http://127.0.0.1:');
  const base = `http://127.0.0.1:${port}`;
  const consumers = async () =>
    ((await (await fetch(`http://127.0.0.1:${ctx.server.monitorPort}/jsz`, { signal: AbortSignal.timeout(5_000) })).json()) as { consumers: number }).consumers;

  const client = await SessiondClient.connect({ connection: { servers: ctx.server.url, ...CLIENT } });
  try {
    await client.admit('ses_q_big', { id: 'inp_first', prompt: 'small', wake: false });
    const baseline = await consumers();
    const path = '/v1/sessions/ses_q_big/events';
    const stalled = await Promise.all([0, 1, 2].map(() => nonReading(port, path)));
    // the fourth is refused while the three are open
    await until(async () => {
      const res = await fetch(base + path, { headers: { authorization: `Bearer ${WEB}` } });
      if (res.status === 200) {
        await res.body?.cancel();
        return false;
      }
      assert.is(res.status, 429);
      const body = (await res.json()) as { error: { code: string; message: string } };
      assert.is(body.error.code, 'limit_exceeded');
      assert.match(body.error.message, 'token web is at its limit streams = 3');
      assert.match(body.error.message, 'Close a stream');
      return true;
    }, 'a fourth stream to be refused');

    // 6 MB of events: more than the streams' buffers and the sockets' hold
    const big = 'x'.repeat(200 * 1024);
    for (let i = 0; i < 30; i++) await client.admit('ses_q_big', { id: `inp_big_${i}`, prompt: big, wake: false, delivery: 'steer' });
    // the gateway cuts each within seconds: its side of each connection is gone (the clients,
    // not reading, do not notice yet)
    const sockets = stalled.map((s) => s.socket);
    assert.is(serverSide(port, sockets), 3, 'the three connections are open');
    await until(() => serverSide(port, sockets) === 0, `the gateway to cut the streams (${serverSide(port, sockets)} open)`, 20_000);
    for (const s of stalled) s.socket.destroy();
    // places given back: a reading client gets a stream again
    const again = await fetch(base + path, { headers: { authorization: `Bearer ${WEB}` } });
    assert.is(again.status, 200);
    await again.body?.cancel();
    // and the consumers behind them are gone now, not after the 5-minute inactive threshold
    await until(async () => (await consumers()) <= baseline, `consumers back to ${baseline} (now ${await consumers()})`, 10_000);

    // streams that stall while the gateway replays the 6 MB history: cut too, consumers gone
    const replaying = (await Promise.all([0, 1, 2].map(() => nonReading(port, path)))).map((s) => s.socket);
    await until(() => serverSide(port, replaying) === 0, `the gateway to cut the replaying streams (${serverSide(port, replaying)} open)`, 20_000);
    for (const socket of replaying) socket.destroy();
    await until(async () => (await consumers()) <= baseline, `consumers back to ${baseline} after the replays (now ${await consumers()})`, 10_000);
  } finally {
    await client.close();
  }
});

s('streams - embedded (serve --http --db): the same cap, and non-reading streams cut by the worker itself', async (ctx) => {
  const tokens = ctx.tmp.file('tokens-embedded.json');
  writeFileSync(tokens, JSON.stringify({ tokens: [{ name: 'web', token: WEB, sessions: 'ses_e_', limits: { streams: 2 } }] }));
  const port = await stablePort();
  const worker = startCli(['serve', '--http', String(port), '--db', ctx.tmp.file('embedded.db'), '--tokens', tokens]);
  ctx.workers.push(worker);
  await worker.waitFor('gateway: http://127.0.0.1:');
  const base = `http://127.0.0.1:${port}`;
  const post = (body: unknown) =>
    fetch(`${base}/v1/sessions/ses_e_big/inputs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${WEB}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  assert.is((await post({ id: 'inp_first', prompt: 'small', wake: false })).status, 200);
  const path = '/v1/sessions/ses_e_big/events';
  const stalled = (await Promise.all([0, 1].map(() => nonReading(port, path)))).map((s) => s.socket);
  await until(async () => {
    const res = await fetch(base + path, { headers: { authorization: `Bearer ${WEB}` } });
    if (res.status === 200) await res.body?.cancel();
    return res.status === 429;
  }, 'a third stream to be refused');
  const big = 'x'.repeat(200 * 1024);
  for (let i = 0; i < 30; i++) assert.is((await post({ id: `inp_big_${i}`, prompt: big, wake: false, delivery: 'steer' })).status, 200);
  await until(() => serverSide(port, stalled) === 0, `the worker to cut the streams (${serverSide(port, stalled)} open)`, 20_000);
  for (const socket of stalled) socket.destroy();
  const again = await fetch(base + path, { headers: { authorization: `Bearer ${WEB}` } });
  assert.is(again.status, 200);
  await again.body?.cancel();
});

s.run();
