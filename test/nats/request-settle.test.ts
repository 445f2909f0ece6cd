// An answered NATS request builds no Error (src/nats/request-settle.ts): nats.js 3.4 rejected every
// settled request's promise with a new RequestError, a stack captured per JetStream publish. Failed
// requests still fail as nats.js makes them: no responders, a timeout.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectNats } from '../../src/nats/connection.ts';
import { startNatsServer, type NatsServer } from '../../src/testing/nats-server.ts';

const require = createRequire(import.meta.url);
// nats.js's own errors module (not exported by name): the RequestError its requests construct
const core = createRequire(require.resolve('@nats-io/transport-node')).resolve('@nats-io/nats-core/internal');
const errorsModule = require(join(dirname(core), 'errors.js')) as {
  RequestError: new (message?: string, options?: ErrorOptions) => Error;
};

let server: NatsServer;
let nc: NatsConnection;
let built = 0;
const Original = errorsModule.RequestError;

test.before(async () => {
  const user = { user: 'settle', pass: 'settle-secret' };
  server = await startNatsServer({ extraUsers: [user] });
  nc = await connectNats({ servers: server.url, ...user });
  class Counted extends Original {
    constructor(message?: string, options?: ErrorOptions) {
      super(message, options);
      built++;
    }
  }
  errorsModule.RequestError = Counted;
});

test.after(async () => {
  errorsModule.RequestError = Original;
  await nc?.close();
  await server?.stop();
});

test('request settle - 200 answered JetStream publishes and stream reads build no Error', async () => {
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: 'SETTLE', subjects: ['settle.>'] });
  const js = jetstream(nc);
  built = 0;
  for (let i = 0; i < 200; i++) await js.publish('settle.a', new Uint8Array([i % 256]));
  const last = await jsm.streams.getMessage('SETTLE', { last_by_subj: 'settle.a' });
  assert.is(last?.seq, 200);
  assert.is(built, 0, `an answered request built ${built} errors`);
  const echo = nc.subscribe('plain.echo', {
    callback: (_err, m) => {
      m.respond(m.data);
    },
  });
  const answer = await nc.request('plain.echo', new Uint8Array([7]), { timeout: 5_000 });
  assert.equal([...answer.data], [7]);
  echo.unsubscribe();
  assert.is(built, 0);
});

test('request settle - a request nobody answers still fails: no responders, then a timeout', async () => {
  const none = await nc.request('plain.nobody', new Uint8Array(), { timeout: 5_000 }).then(
    () => undefined,
    (err: unknown) => err as Error,
  );
  assert.ok(none, 'a request with no responders must reject');
  assert.match(`${none} ${(none as Error & { cause?: unknown }).cause}`, /no responders/i);
  const silent = nc.subscribe('plain.silent', { callback: () => undefined });
  const timedOut = await nc.request('plain.silent', new Uint8Array(), { timeout: 200 }).then(
    () => undefined,
    (err: unknown) => err as Error,
  );
  silent.unsubscribe();
  assert.ok(timedOut, 'an unanswered request must time out');
  assert.match(String(timedOut), /timeout/i);
});

test.run();
