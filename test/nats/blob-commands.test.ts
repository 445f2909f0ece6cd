/**
 * Blobs through the commands, on a real nats-server with the shipped nats.conf plus two tenant users
 * as `sessiond setup --tenant` makes them, and engines on the JetStream log with the Object Store:
 * uploads in chunks (across workers), refused uploads, and reads with the caller's reach only.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { SessiondClient } from '../../src/client/client.ts';
import { ErrorCode } from '../../src/errors.ts';
import { openEngine } from '../../src/engine.ts';
import { isCommandError, MAX_UPLOAD_CHUNK_BYTES } from '../../src/nats/command-protocol.ts';
import { startCommandService, type CommandServiceOptions } from '../../src/nats/command-service.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { NatsLiveBus } from '../../src/nats/live-bus.ts';
import { ObjectBlobStore } from '../../src/nats/object-blob-store.ts';
import { parseStagedName } from '../../src/blobs/blob-staging.ts';
import { tenantUserBlock } from '../../src/nats/tenant-user.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import type { Runner } from '../../src/runner/types.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { runCli } from '../support/cli.ts';
import { CLIENT, COMMANDS, REPO_NATS_CONF, WORKER, startNatsServer, type NatsServer } from '../../src/testing/nats-server.ts';
import { pngBytes } from '../support/png.ts';
import { tempDir } from '../support/tmp.ts';
import { sessionId } from './helpers.ts';

const PASS = { acme: 'acme-blob-secret-0123456789', globex: 'globex-blob-secret-0123456789' };
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

interface Ctx {
  server: NatsServer;
  tmp: ReturnType<typeof tempDir>;
  closers: (() => Promise<unknown>)[];
}
const s = suite<Ctx>('NATS blob commands');

s.before(async (ctx) => {
  ctx.tmp = tempDir();
  ctx.closers = [];
  let conf = readFileSync(REPO_NATS_CONF, 'utf8');
  for (const tenant of ['acme', 'globex'] as const) conf = conf.replace(/users:\s*\[/, (m) => `${m}\n${tenantUserBlock(tenant, PASS[tenant])}`);
  const file = ctx.tmp.file('nats-blobs.conf');
  writeFileSync(file, conf);
  ctx.server = await startNatsServer({ config: file });
});
s.after.each(async (ctx) => {
  for (const close of ctx.closers.reverse()) await close().catch(() => undefined);
  ctx.closers = [];
});
s.after(async (ctx) => {
  await ctx.server.dispose();
  ctx.tmp.remove();
});

let files = 0;
/** A worker: an engine on the JetStream log with the Object Store, serving commands on its own connection. */
async function worker(ctx: Ctx, options: CommandServiceOptions = {}, runner: Runner = echoRunner()) {
  const nc = await connectNats({ servers: ctx.server.url, ...WORKER });
  const log = await JetStreamEventLog.open({ connection: nc });
  const blobs = await ObjectBlobStore.open(nc);
  const engine = await openEngine({ file: ctx.tmp.file(`blob-engine-${++files}.db`), log, bus: new NatsLiveBus(nc), runner, blobs });
  const cnc = await connectNats({ servers: ctx.server.url, ...COMMANDS });
  const service = startCommandService(cnc, engine, options);
  const close = async () => {
    await service.close();
    await cnc.close();
    await engine.close();
    await log.close();
    await nc.close();
  };
  let closed = false;
  const once = () => (closed ? Promise.resolve() : ((closed = true), close()));
  ctx.closers.push(once);
  return { engine, blobs, close: once };
}

async function client(ctx: Ctx, who: 'client' | 'acme' | 'globex' = 'client'): Promise<SessiondClient> {
  const c =
    who === 'client'
      ? await SessiondClient.connect({ connection: { servers: ctx.server.url, ...CLIENT } })
      : await SessiondClient.connect({ tenant: who, connection: { servers: ctx.server.url, user: `tenant-${who}`, pass: PASS[who] } });
  ctx.closers.push(() => c.close());
  return c;
}

async function failure(p: Promise<unknown>): Promise<{ failure: string; code: string; message: string }> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(isCommandError(err), `expected a CommandError, got ${String(err)}`);
  return err;
}

/** An admission whose prompt references `ref`, left pending (no turn needed to reference it). */
const admitRef = (c: SessiondClient, id: string, ref: { sha256: string; size: number; mediaType: string }) =>
  c.admit(id, {
    prompt: [
      { type: 'text', text: 'look' },
      { type: 'image', blob: ref },
    ],
    wake: false,
  });

s('blob commands - a 2 MB image uploaded in chunks is referenced by a prompt and read back whole', async (ctx) => {
  await worker(ctx);
  const c = await client(ctx);
  const png = pngBytes(2 * 1024 * 1024 + 12_345, 3);
  const ref = await c.uploadBlob(png, { mediaType: 'image/png' });
  assert.equal(ref, { sha256: sha(png), size: png.length, mediaType: 'image/png' });
  const id = sessionId('blob');
  await admitRef(c, id, ref);
  const back = await c.readBlob(id, ref);
  assert.is(back.length, png.length);
  assert.ok(Buffer.from(back).equals(png), 'the bytes read back are the bytes uploaded');
  // chunk by chunk, none over the reply's limit
  const sizes: number[] = [];
  for await (const chunk of c.readBlobChunks(id, ref.sha256)) sizes.push(chunk.length);
  assert.ok(sizes.length >= 5 && sizes.every((n) => n <= MAX_UPLOAD_CHUNK_BYTES), `chunks ${sizes.join(',')}`);
});

s('blob commands - a stream of odd-sized chunks uploads as one blob', async (ctx) => {
  await worker(ctx);
  const c = await client(ctx);
  const png = pngBytes(1_300_000, 5);
  async function* pieces() {
    for (let at = 0; at < png.length; at += 99_999) yield png.subarray(at, at + 99_999);
  }
  const ref = await c.uploadBlob(pieces(), { mediaType: 'image/png' });
  assert.equal(ref, { sha256: sha(png), size: png.length, mediaType: 'image/png' });
});

s('blob commands - an upload whose chunks reach two different workers assembles, and its staged chunks are removed', async (ctx) => {
  const a = await worker(ctx);
  const c = await client(ctx);
  const png = pngBytes(MAX_UPLOAD_CHUNK_BYTES + 1000, 7);
  const uploadId = 'upl_two_workers_1';
  const first = png.subarray(0, MAX_UPLOAD_CHUNK_BYTES);
  const send = (c as unknown as { request: (v: string, b: unknown) => Promise<Record<string, unknown>> }).request.bind(c);
  const staged = await send('upload', { uploadId, offset: 0, data: Buffer.from(first).toString('base64'), mediaType: 'image/png', size: png.length });
  assert.is(staged['received'], MAX_UPLOAD_CHUNK_BYTES);
  const names: string[] = [];
  for await (const chunk of a.blobs.listStaged()) names.push(chunk.name);
  assert.ok(names.includes(`upload.trusted.${uploadId}.0`), names.join(', '));
  assert.equal(parseStagedName(`upload.trusted.${uploadId}.0`), { scope: 'trusted', uploadId, offset: 0 });
  // worker A stops; worker B alone takes the last chunk
  await a.close();
  const b = await worker(ctx);
  const last = await send('upload', {
    uploadId,
    offset: MAX_UPLOAD_CHUNK_BYTES,
    data: png.subarray(MAX_UPLOAD_CHUNK_BYTES).toString('base64'),
    mediaType: 'image/png',
    size: png.length,
    sha256: sha(png),
  });
  assert.equal(last['blob'], { sha256: sha(png), size: png.length, mediaType: 'image/png' });
  assert.ok(Buffer.from(await b.blobs.get(sha(png))).equals(png));
  const left: string[] = [];
  for await (const chunk of b.blobs.listStaged()) if (chunk.name.includes(uploadId)) left.push(chunk.name);
  assert.equal(left, []);
});

s('blob commands - a wrong hash, a media type the bytes contradict and a declared size over the limit are refused, saying what was wrong', async (ctx) => {
  await worker(ctx, { maxBlobBytes: 1024 * 1024 });
  const c = await client(ctx);
  const send = (c as unknown as { request: (v: string, b: unknown) => Promise<Record<string, unknown>> }).request.bind(c);
  const small = pngBytes(400_000, 9);
  const wrong = await failure(
    send('upload', {
      uploadId: 'upl_wrong_hash',
      offset: 0,
      data: small.toString('base64'),
      mediaType: 'image/png',
      size: small.length,
      sha256: sha(Buffer.from('other')),
    }),
  );
  assert.is(wrong.code, ErrorCode.InvalidPayload);
  assert.match(wrong.message, `hash to ${sha(small)}`);
  // in chunks: the staged ones are removed with the refusal
  const png = pngBytes(600_000, 9);
  const jpeg = await failure(c.uploadBlob(png, { mediaType: 'image/jpeg' }));
  assert.is(jpeg.code, ErrorCode.InvalidPayload);
  assert.match(jpeg.message, 'media type does not match');
  // over the limit as declared: refused at the first chunk, nothing staged
  const big = await failure(send('upload', { uploadId: 'upl_too_big_1', offset: 0, data: 'iVBORw0KGgo=', mediaType: 'image/png', size: 5 * 1024 * 1024 }));
  assert.is(big.code, ErrorCode.PayloadTooLarge);
  assert.match(big.message, 'limit of 1048576 bytes');
  // a stream of unknown size is refused once it passes the limit
  async function* endless() {
    for (let i = 0; i < 10; i++) yield pngBytes(300_000, i);
  }
  assert.is((await failure(c.uploadBlob(endless(), { mediaType: 'image/png' }))).code, ErrorCode.PayloadTooLarge);
});

s('blob commands - a tenant reads its own session blobs; another tenant, and a session without the reference, get not_found', async (ctx) => {
  await worker(ctx);
  const acme = await client(ctx, 'acme');
  const globex = await client(ctx, 'globex');
  const trusted = await client(ctx);
  const png = pngBytes(700_000, 11);
  const ref = await acme.uploadBlob(png, { mediaType: 'image/png' });
  const id = sessionId('acme');
  await admitRef(acme, id, ref);
  assert.ok(Buffer.from(await acme.readBlob(id, ref)).equals(png));
  // another tenant, naming acme's session and blob
  const foreign = await failure(globex.readBlob(id, ref));
  assert.is(foreign.code, ErrorCode.NotFound);
  assert.not.match(foreign.message, 'look');
  // globex's own session, which does not reference it
  const own = sessionId('globex');
  await globex.admit(own, { prompt: 'no image here', wake: false });
  assert.is((await failure(globex.readBlob(own, ref))).code, ErrorCode.NotFound);
  // a session that does not exist
  assert.is((await failure(globex.readBlob(sessionId('none'), ref))).code, ErrorCode.NotFound);
  // acme's other session, which does not reference it either
  const other = sessionId('acme2');
  await acme.admit(other, { prompt: 'plain', wake: false });
  assert.is((await failure(acme.readBlob(other, ref))).code, ErrorCode.NotFound);
  // the trusted client reaches every session
  assert.ok(Buffer.from(await trusted.readBlob(id, ref.sha256)).equals(png));
});

/** A runner that reads the bytes of every blob part of its turn's prompts, as a model runner does, and records their hash and size. */
function blobReader(seen: { sha256: string; size: number }[]): Runner {
  const echo = echoRunner();
  return async (ctx) => {
    for (const input of ctx.inputs) {
      for (const part of input.parts ?? []) {
        if ((part.type === 'image' || part.type === 'file') && 'blob' in part) {
          const bytes = await ctx.blob(part.blob);
          seen.push({ sha256: sha(bytes), size: bytes.length });
        }
      }
    }
    await echo(ctx);
  };
}

s('blob commands - sessiond prompt --nats --image with a 6 MB photo uploads it first and the turn reads it whole', async (ctx) => {
  const seen: { sha256: string; size: number }[] = [];
  await worker(ctx, {}, blobReader(seen));
  const photo = pngBytes(6 * 1024 * 1024, 13);
  const file = ctx.tmp.file('big.png');
  writeFileSync(file, photo);
  const id = sessionId('cli');
  const r = await runCli(['prompt', id, 'describe this', '--image', file, '--nats', ctx.server.url, '--nats-user', CLIENT.user, '--nats-pass', CLIENT.pass]);
  assert.is(r.code, 0, `${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /admitted inp_\w+ to /);
  await waitFor(() => seen.length > 0, { timeoutMs: 30_000, what: 'the turn to read the image' });
  assert.equal(seen, [{ sha256: sha(photo), size: photo.length }]);
  // the event holds the reference, and the client reads the bytes back through it
  const c = await client(ctx);
  const admitted = (await c.events(id, { limit: 1 }))[0]!;
  assert.equal((admitted.payload as { prompt: unknown[] }).prompt[1], {
    type: 'image',
    blob: { sha256: sha(photo), size: photo.length, mediaType: 'image/png' },
  });
  assert.ok(Buffer.from(await c.readBlob(id, sha(photo))).equals(photo));
});

s('blob commands - a tenant admits a prompt with a large inline image: the client uploads it as the tenant, and the turn reads it', async (ctx) => {
  const seen: { sha256: string; size: number }[] = [];
  await worker(ctx, {}, blobReader(seen));
  const acme = await client(ctx, 'acme');
  const png = pngBytes(900_000, 17);
  const id = sessionId('acme_inline');
  await acme.admit(id, {
    prompt: [
      { type: 'text', text: 'and this?' },
      { type: 'image', data: png.toString('base64'), mediaType: 'image/png' },
    ],
  });
  await waitFor(() => seen.length > 0, { timeoutMs: 30_000, what: 'the turn to read the image' });
  assert.equal(seen, [{ sha256: sha(png), size: png.length }]);
});

s('blob commands - a tenant may reference only blobs it uploaded; a hash named in a json part is no reference to read', async (ctx) => {
  await worker(ctx);
  const acme = await client(ctx, 'acme');
  const globex = await client(ctx, 'globex');
  const png = pngBytes(300_000, 19);
  const ref = await acme.uploadBlob(png, { mediaType: 'image/png' });
  const mine = sessionId('acme_own');
  await admitRef(acme, mine, ref);
  // globex knows the hash (a leak, a guess) but did not upload the bytes and reaches no session with them
  const theirs = sessionId('globex_steal');
  const refused = await failure(admitRef(globex, theirs, ref));
  assert.is(refused.code, ErrorCode.InvalidOption);
  assert.match(refused.message, 'not stored or is not yours to use');
  assert.match(refused.message, 'upload its bytes first');
  // nor through a json part that merely names it: the blob command reads references where events carry them
  await globex.admit(theirs, { prompt: [{ type: 'json', value: { blob: ref, ...ref } }], wake: false });
  assert.is((await failure(globex.readBlob(theirs, ref))).code, ErrorCode.NotFound);
  // once globex uploads the same bytes itself, it may
  await globex.uploadBlob(png, { mediaType: 'image/png' });
  await admitRef(globex, theirs, ref);
  assert.ok(Buffer.from(await globex.readBlob(theirs, ref)).equals(png));
});

s('blob commands - a trusted upload for an owner lets that owner admit it; a tenant uploads only for itself', async (ctx) => {
  await worker(ctx);
  const trusted = await client(ctx);
  const acme = await client(ctx, 'acme');
  const png = pngBytes(200_000, 23);
  const forNobody = await trusted.uploadBlob(png, { mediaType: 'image/png' });
  const id = sessionId('owned');
  const refused = await failure(trusted.admit(id, { prompt: [{ type: 'image', blob: forNobody }], owner: 'token:bob', wake: false }));
  assert.match(refused.message, 'not yours to use');
  await trusted.uploadBlob(png, { mediaType: 'image/png', owner: 'token:bob' });
  await trusted.admit(id, { prompt: [{ type: 'image', blob: forNobody }], owner: 'token:bob', wake: false });
  // the client's admit uploads a large inline part for the admission's owner
  await trusted.admit(sessionId('owned_inline'), {
    prompt: [{ type: 'image', data: pngBytes(100_000, 29).toString('base64'), mediaType: 'image/png' }],
    owner: 'token:carol',
    wake: false,
  });
  const other = await failure(acme.uploadBlob(png, { mediaType: 'image/png', owner: 'globex' }));
  assert.is(other.code, ErrorCode.PermissionDenied);
  assert.match(other.message, 'A tenant uploads for itself');
});

s('blob commands - the reply names the referencing event; later chunks read only that event, and a wrong one is not_found', async (ctx) => {
  await worker(ctx);
  const c = await client(ctx);
  const png = pngBytes(MAX_UPLOAD_CHUNK_BYTES + 10_000, 31);
  const ref = await c.uploadBlob(png, { mediaType: 'image/png' });
  const id = sessionId('seq');
  await c.admit(id, { prompt: 'first, no image', wake: false });
  const receipt = await admitRef(c, id, ref);
  const first = await c.blobChunk(id, ref.sha256);
  assert.is(first.seq, receipt.admittedSeq);
  const next = await c.blobChunk(id, ref.sha256, MAX_UPLOAD_CHUNK_BYTES, first.seq);
  assert.is(next.more, false);
  assert.ok(Buffer.concat([Buffer.from(first.data, 'base64'), Buffer.from(next.data, 'base64')]).equals(png));
  // seq 1 is the admission without the image
  assert.is((await failure(c.blobChunk(id, ref.sha256, 0, 1))).code, ErrorCode.NotFound);
});

s.run();
