/**
 * Session owners through the embedded gateway (`startSessiond` + `startGateway`, in process): the
 * tenancy scenarios of test/support/tenancy.ts, a stream opened on an id another owner then takes
 * (it stays silent), and forks made outside the gateway keeping the source's owner.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startSessiond, type Sessiond } from '../../src/host.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { startGateway, type Gateway } from '../../src/gateway/server.ts';
import { engineLive } from '../../src/gateway/live.ts';
import { parseTokens } from '../../src/gateway/tokens.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { readSse } from '../support/sse.ts';
import { tempDir } from '../support/tmp.ts';
import { TA, TB, TENANCY_TOKENS, assertNotFound, client, forkKeepsOwner, settledBy, tagTokenClaimsPrefixId, tenantsRace } from '../support/tenancy.ts';

const tmp = tempDir();
let sessiond: Sessiond;
let gateway: Gateway;

test.before(async () => {
  sessiond = await startSessiond({ db: tmp.file('tenancy.db'), runner: echoRunner({ steps: 1 }) });
  gateway = await startGateway({
    sessions: sessiond,
    live: engineLive(sessiond),
    port: 0,
    heartbeatMs: 100,
    tokens: parseTokens(JSON.stringify(TENANCY_TOKENS), 'test'),
  });
});

test.after(async () => {
  await gateway?.close();
  await sessiond?.close();
  tmp.remove();
});

test('a tag token cannot claim an id a prefix token then types into (the High finding)', async () => {
  await tagTokenClaimsPrefixId(gateway.url);
});

test('two tenants racing to create 40 ids: each id admits one, the loser reads nothing', async () => {
  await tenantsRace(gateway.url, 40);
});

test('a fork keeps its source’s owner, through the gateway and through the engine API', async () => {
  await forkKeepsOwner(gateway.url);
  // a trusted process's fork (the inspector's, the CLI's) copies the owner too
  await sessiond.fork('ses_r_src', 'ses_r_fork_trusted');
  assert.is((await sessiond.status('ses_r_fork_trusted')).ownedBy, 'ta');
  assertNotFound(await client(gateway.url).status(TB, 'ses_r_fork_trusted'), 'ses_r_fork_trusted', 'tb does not reach it');
});

test('a stream opened on an id before another tenant takes it stays silent: heartbeats, no event', async () => {
  const early = await readSse(new URL(`/v1/sessions/ses_r_early/events?access_token=${TB}`, gateway.url).href);
  assert.is(early.status, 200, 'an id of its prefix with no events may be listened to');
  assert.is((await client(gateway.url).admit(TA, 'ses_r_early', 'the secret of ta')).status, 200);
  await settledBy(gateway.url, 'ses_r_early');
  const beats = early.comments.filter((c) => c.startsWith('heartbeat')).length;
  await waitFor(() => early.comments.filter((c) => c.startsWith('heartbeat')).length >= beats + 2, { what: 'two more heartbeats' });
  early.close();
  assert.equal(early.frames, [], 'nothing of ta’s session reached tb');
  // an id another tenant already holds opens the same way, and stays as silent
  const taken = await readSse(new URL(`/v1/sessions/ses_r_early/events?access_token=${TB}`, gateway.url).href);
  assert.is(taken.status, 200, 'the same answer as for an id with no events');
  await waitFor(() => taken.comments.filter((c) => c.startsWith('heartbeat')).length >= 2, { what: 'two heartbeats' });
  taken.close();
  assert.equal(taken.frames, [], 'nothing of ta’s session');
  // the owner's own stream, opened the same way, gets it all
  const own = await readSse(new URL(`/v1/sessions/ses_r_early/events?access_token=${TA}`, gateway.url).href);
  await own.next((f) => f.json?.type === 'execution.settled');
  own.close();
  assert.match(own.frames.map((f) => f.data).join(), 'the secret of ta');
});

test('a session made by a trusted process (no owner) stays reachable, and an owner’s admission does not claim it', async () => {
  await sessiond.admit('ses_r_shared', { prompt: 'made by the CLI', wake: false });
  const c = client(gateway.url);
  assert.is((await c.admit(TA, 'ses_r_shared', 'ta here')).status, 200);
  assert.is((await c.admit(TB, 'ses_r_shared', 'tb here')).status, 200);
  assert.is((await sessiond.status('ses_r_shared')).ownedBy, null);
});

test.run();
