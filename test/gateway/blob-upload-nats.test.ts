/**
 * `POST /v1/blobs` on a gateway in front of NATS (a `SessiondClient`, a worker on JetStream with the
 * Object Store, a real nats-server): the upload goes to the workers with the `upload` command, the
 * token's owner is granted it, the turn reads it whole; another owner's reference and a wrong hash
 * are refused.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { SessiondClient } from '../../src/client/client.ts';
import { openEngine } from '../../src/engine.ts';
import { startGateway, type Gateway } from '../../src/gateway/server.ts';
import { parseTokens } from '../../src/gateway/tokens.ts';
import { startCommandService } from '../../src/nats/command-service.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { NatsLiveBus } from '../../src/nats/live-bus.ts';
import { ObjectBlobStore } from '../../src/nats/object-blob-store.ts';
import { sha256Hex, type BlobRef } from '../../src/blobs/blob-store.ts';
import type { Runner } from '../../src/runner/types.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { CLIENT, COMMANDS, REPO_NATS_CONF, WORKER, startNatsServer, type NatsServer } from '../../src/testing/nats-server.ts';
import { pngBytes } from '../support/png.ts';
import { tempDir } from '../support/tmp.ts';
import { TA, TB, TENANCY_TOKENS } from '../support/tenancy.ts';

interface Ctx {
  server: NatsServer;
  tmp: ReturnType<typeof tempDir>;
  gw: Gateway;
  read: Map<string, Buffer[]>;
  closers: (() => Promise<unknown>)[];
}
const s = suite<Ctx>('POST /v1/blobs in front of NATS');

s.before(async (ctx) => {
  ctx.tmp = tempDir();
  ctx.closers = [];
  ctx.read = new Map();
  ctx.server = await startNatsServer({ config: REPO_NATS_CONF });
  const runner: Runner = async (run) => {
    const refs = run.inputs.flatMap((i) => i.parts ?? []).flatMap((p) => ('blob' in p ? [p.blob as BlobRef] : []));
    ctx.read.set(run.sessionId, await Promise.all(refs.map(async (r) => Buffer.from(await run.blob(r)))));
  };
  const nc = await connectNats({ servers: ctx.server.url, ...WORKER });
  const log = await JetStreamEventLog.open({ connection: nc });
  const blobs = await ObjectBlobStore.open(nc);
  const engine = await openEngine({ file: ctx.tmp.file('worker.db'), log, bus: new NatsLiveBus(nc), runner, blobs });
  const cnc = await connectNats({ servers: ctx.server.url, ...COMMANDS });
  const service = startCommandService(cnc, engine, {});
  const client = await SessiondClient.connect({ connection: { servers: ctx.server.url, ...CLIENT } });
  ctx.gw = await startGateway({ sessions: client, port: 0, tokens: parseTokens(JSON.stringify(TENANCY_TOKENS), 'test') });
  ctx.closers.push(
    () => ctx.gw.close(),
    () => client.close(),
    () => service.close(),
    () => cnc.close(),
    () => engine.close(),
    () => log.close(),
    () => nc.close(),
  );
});
s.after(async (ctx) => {
  for (const close of ctx.closers) await close().catch(() => undefined);
  await ctx.server?.dispose();
  ctx.tmp.remove();
});

// biome-ignore lint/suspicious/noExplicitAny: JSON replies read loosely in assertions
type Reply = { status: number; body: Record<string, any> };

async function call(gw: Gateway, path: string, token: string, headers: Record<string, string>, body: BodyInit): Promise<Reply> {
  const res = await fetch(new URL(path, gw.url), { method: 'POST', headers: { authorization: `Bearer ${token}`, ...headers }, body });
  return { status: res.status, body: (await res.json()) as Reply['body'] };
}

s('a 6 MB photo uploaded through the gateway is admitted by reference and read whole; the grant is the uploader’s', async (ctx) => {
  const photo = pngBytes(6 * 1024 * 1024, 21);
  const ref = { sha256: sha256Hex(photo), size: photo.length, mediaType: 'image/png' };
  const uploaded = await call(ctx.gw, '/v1/blobs', TA, { 'content-type': 'image/png', 'x-sessiond-sha256': ref.sha256 }, new Uint8Array(photo));
  assert.is(uploaded.status, 201, JSON.stringify(uploaded.body));
  assert.equal(uploaded.body, ref);
  const prompt = (id: string, token: string) =>
    call(ctx.gw, `/v1/sessions/${id}/inputs`, token, { 'content-type': 'application/json' }, JSON.stringify({ prompt: [{ type: 'image', blob: ref }] }));
  const admitted = await prompt('ses_r_nats_up1', TA);
  assert.is(admitted.status, 200, JSON.stringify(admitted.body));
  await waitFor(() => ctx.read.has('ses_r_nats_up1'), { what: 'the turn to read the photo', timeoutMs: 30_000 });
  assert.ok(ctx.read.get('ses_r_nats_up1')![0]!.equals(photo), 'the runner read the photo whole');
  // tb knows the hash but never uploaded the bytes: refused
  const stolen = await prompt('ses_r_nats_up2', TB);
  assert.is(stolen.status, 400, JSON.stringify(stolen.body));
  assert.match(stolen.body.error.message, 'not yours to use');
});

s('a wrong hash is refused before the upload is assembled', async (ctx) => {
  const photo = pngBytes(2 * 1024 * 1024, 22);
  const other = sha256Hex(pngBytes(10));
  const wrong = await call(ctx.gw, '/v1/blobs', TA, { 'content-type': 'image/png', 'x-sessiond-sha256': other }, new Uint8Array(photo));
  assert.equal([wrong.status, wrong.body.error.code], [400, 'invalid_payload']);
  assert.match(wrong.body.error.message, `not ${other}`);
  const nc = await connectNats({ servers: ctx.server.url, ...WORKER });
  try {
    assert.not.ok(await (await ObjectBlobStore.open(nc)).has(sha256Hex(photo)), 'nothing stored under the bytes’ hash');
  } finally {
    await nc.close();
  }
});

s.run();
