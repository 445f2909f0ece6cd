// The monitoring port of a real nats-server with the repo's nats.conf, read with no credentials: it
// lists a worker's inbox and its consumers' names, which the inbox prefixes keep from other users.
// That is why nats.conf binds it to loopback and docs/protocol.md says no untrusted user may reach it.
import { readFileSync } from 'node:fs';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { jetstreamManager } from '@nats-io/jetstream';
import { STREAM_NAME } from '../../src/nats/subjects.ts';
import { ADMIN, REPO_NATS_CONF } from '../../src/testing/nats-server.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { natsWorld, sessionId, type NatsWorld } from './helpers.ts';

const s = suite<{ world: NatsWorld }>('NATS monitoring port');
s.before(async (ctx) => {
  ctx.world = await natsWorld();
});
s.after(async (ctx) => {
  await ctx.world.dispose();
});

const PROTOCOL = new URL('../../docs/protocol.md', import.meta.url);

s('monitoring port - lists worker inboxes and consumer names without a login; nats.conf keeps it on loopback and the docs say why', async ({ world }) => {
  const { engine } = await world.engine();
  await engine.admit(sessionId('mon'), { prompt: 'watched', wake: false });
  const admin = await jetstreamManager(await world.connect(ADMIN));
  const names: string[] = [];
  await waitFor(
    async () => {
      names.length = 0;
      for await (const c of admin.consumers.list(STREAM_NAME)) names.push(c.name);
      return names.length > 0;
    },
    { what: "the worker's consumer" },
  );

  const read = async (path: string) => (await fetch(`http://127.0.0.1:${world.server.monitorPort}${path}`, { signal: AbortSignal.timeout(5_000) })).text();
  const subs = await read('/connz?subs=1');
  assert.match(subs, /"_INBOX_worker\.[A-Za-z0-9]+/, "the worker's inbox, to anyone who can connect");
  const jsz = await read('/jsz?consumers=true');
  for (const name of names) assert.match(jsz, `"name": "${name}"`, `consumer ${name}, to anyone who can connect`);

  const http = readFileSync(REPO_NATS_CONF, 'utf8')
    .split('\n')
    .filter((l) => /^\s*http\s*:/.test(l));
  assert.equal(http, ['http: 127.0.0.1:8222'], 'nats.conf binds monitoring to loopback only');
  const docs = readFileSync(PROTOCOL, 'utf8').replace(/\s+/g, ' ');
  assert.match(docs, '## The monitoring port');
  assert.match(docs, '**the monitoring port must not be reachable by untrusted users**');
  assert.match(docs, "which list every connection's subscriptions, among them each worker's inbox");
  assert.match(docs, "`/jsz?consumers=true`, which lists every consumer's name");
});

s.run();
