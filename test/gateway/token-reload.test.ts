/**
 * A tokens file that changes, in process: a removed token stops working on new requests and its
 * open event streams end within the recheck interval; a token that stays keeps its stream.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFileSync } from 'node:fs';
import { startSessiond, type Sessiond } from '../../src/host.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { startGateway, type Gateway } from '../../src/gateway/server.ts';
import { tokenFile } from '../../src/gateway/token-file.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { readSse } from '../support/sse.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir();
const A = 'token-a-0123456789abcdef';
const B = 'token-b-0123456789abcdef';
let sessiond: Sessiond;
let gw: Gateway;
const file = tmp.file('tokens.json');
const write = (...names: string[]) => writeFileSync(file, JSON.stringify({ tokens: names.map((n) => ({ name: n, token: n === 'a' ? A : B, sessions: '*' })) }));

test.before(async () => {
  write('a', 'b');
  sessiond = await startSessiond({ db: tmp.file('reload.db'), runner: echoRunner({ steps: 1 }) });
  gw = await startGateway({ sessions: sessiond, port: 0, heartbeatMs: 100, recheckMs: 100, tokens: tokenFile(file, { pollMs: 50 }) });
  await sessiond.admit('ses_r1', { prompt: 'hello' });
  await sessiond.awaitIdle('ses_r1');
});

test.after(async () => {
  await gw?.close();
  await sessiond?.close();
  tmp.remove();
});

test('a removed token: new requests get 401, and its open event stream ends; the other token keeps its stream', async () => {
  const url = (token: string) => new URL(`/v1/sessions/ses_r1/events?access_token=${token}`, gw.url).href;
  const a = await readSse(url(A));
  const b = await readSse(url(B));
  assert.equal([a.status, b.status], [200, 200]);
  await a.next((f) => f.json?.type === 'execution.settled');
  write('b');
  await waitFor(async () => (await fetch(url(A))).status === 401, { timeoutMs: 10_000, what: 'the removed token to get 401' });
  let aEnded = false;
  void a.ended.then(() => {
    aEnded = true;
  });
  await waitFor(() => aEnded, { timeoutMs: 10_000, what: 'the stream of the removed token to end' });
  let bEnded = false;
  void b.ended.then(() => {
    bEnded = true;
  });
  const seen = b.comments.length;
  // heartbeats every 100 ms, rechecks every 100 ms: five more heartbeats span several rechecks
  await waitFor(() => b.comments.length >= seen + 5, { timeoutMs: 10_000, what: 'five more heartbeats on the stream of the token that stays' });
  assert.not.ok(bEnded, 'the stream of a token still in the file goes on');
  b.close();
});

test.run();
