/**
 * Session owners through `sessiond serve --http --nats` (real processes: a NATS worker, the gateway
 * as the client user): the tenancy scenarios of test/support/tenancy.ts, where the owner travels in
 * the admit command and the worker's machine fixes it inside the JetStream append.
 */
import { writeFileSync } from 'node:fs';
import { as, cliSuite, natsWorker } from '../nats/cli-suite.ts';
import { CLIENT, stablePort } from '../../src/testing/nats-server.ts';
import { startCli } from '../support/cli.ts';
import { TENANCY_TOKENS, forkKeepsOwner, tagTokenClaimsPrefixId, tenantsRace } from '../support/tenancy.ts';

const s = cliSuite('sessiond serve --nats: session owners');

let base = '';

s.before(async (ctx) => {
  await natsWorker(ctx, 'tenancy-worker.db', 1);
  const tokens = ctx.tmp.file('tokens.json');
  writeFileSync(tokens, JSON.stringify(TENANCY_TOKENS));
  const port = await stablePort();
  const gateway = startCli(['serve', '--http', String(port), '--nats', ctx.server.url, ...as(CLIENT), '--tokens', tokens]);
  ctx.workers.push(gateway);
  await gateway.waitFor('gateway: http://127.0.0.1:');
  base = `http://127.0.0.1:${port}/`;
});

s('a tag token cannot claim an id a prefix token then types into (the High finding)', async () => {
  await tagTokenClaimsPrefixId(base);
});

s('two tenants racing to create 20 ids: each id admits one, the loser reads nothing', async () => {
  await tenantsRace(base, 20);
});

s('a fork keeps its source’s owner', async () => {
  await forkKeepsOwner(base);
});

s.run();
