/**
 * `POST /v1/blobs` on the embedded gateway: a 6 MB photo streamed into the blob store (its first
 * chunk there before the client sent the rest), admitted by reference, read whole by the turn; the
 * reference is the uploader's owner's only; too large, wrong type, wrong hash refused with a 4xx.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { request as httpRequest } from 'node:http';
import { startSessiond, type Sessiond } from '../../src/host.ts';
import { startGateway, type Gateway } from '../../src/gateway/server.ts';
import { parseTokens } from '../../src/gateway/tokens.ts';
import { sha256Hex, type BlobRef, type BlobSource, type BlobStore } from '../../src/blobs/blob-store.ts';
import type { Runner } from '../../src/runner/types.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { tempDir } from '../support/tmp.ts';
import { pngBytes } from '../support/png.ts';
import { TA, TB, TENANCY_TOKENS } from '../support/tenancy.ts';

const MAX = 8 * 1024 * 1024;
const tmp = tempDir();
let sessiond: Sessiond;
let gw: Gateway;
/** What each turn's runner read: session → the bytes of each blob its prompt referenced. */
const read = new Map<string, Buffer[]>();
/** The chunks each put of the store received, in order of the puts. */
const puts: number[][] = [];
let onChunk: (() => void) | undefined;

const runner: Runner = async (ctx) => {
  const refs = ctx.inputs.flatMap((i) => i.parts ?? []).flatMap((p) => ('blob' in p ? [p.blob as BlobRef] : []));
  read.set(ctx.sessionId, await Promise.all(refs.map(async (r) => Buffer.from(await ctx.blob(r)))));
};

test.before(async () => {
  sessiond = await startSessiond({ db: tmp.file('upload.db'), runner, limits: { maxBlobBytes: MAX } });
  // a spy on the store's put: the chunks it is given, as they come
  const store = sessiond.engine.blobs as BlobStore;
  const put = store.put.bind(store);
  store.put = (source: BlobSource, options) => {
    const sizes: number[] = [];
    puts.push(sizes);
    if (source instanceof Uint8Array) return put(source, options);
    async function* spied() {
      for await (const chunk of source as AsyncIterable<Uint8Array>) {
        sizes.push(chunk.length);
        onChunk?.();
        yield chunk;
      }
    }
    return put(spied(), options);
  };
  gw = await startGateway({ sessions: sessiond, port: 0, tokens: parseTokens(JSON.stringify(TENANCY_TOKENS), 'test') });
});
test.after(async () => {
  await gw?.close();
  await sessiond?.close();
  tmp.remove();
});

// biome-ignore lint/suspicious/noExplicitAny: JSON replies read loosely in assertions
type Reply = { status: number; body: Record<string, any> };

async function upload(bytes: Uint8Array | ReadableStream<Uint8Array>, headers: Record<string, string>, token = TA, query = ''): Promise<Reply> {
  const res = await fetch(new URL(`/v1/blobs${query}`, gw.url), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, ...headers },
    body: bytes,
    ...(bytes instanceof ReadableStream ? { duplex: 'half' } : {}),
  } as RequestInit);
  return { status: res.status, body: (await res.json()) as Reply['body'] };
}

async function admit(id: string, prompt: unknown, token = TA): Promise<Reply> {
  const res = await fetch(new URL(`/v1/sessions/${id}/inputs`, gw.url), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt }),
  });
  return { status: res.status, body: (await res.json()) as Reply['body'] };
}

test('upload - a 6 MB photo is streamed into the store, admitted by reference, read whole by the turn', async () => {
  const photo = pngBytes(6 * 1024 * 1024, 5);
  // the client holds back the second half until the store has its first chunk: the gateway cannot have buffered the body
  let release: () => void = () => {};
  const firstChunkStored = new Promise<void>((r) => (release = r));
  onChunk = release;
  const half = photo.length / 2;
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      controller.enqueue(photo.subarray(0, half));
      await firstChunkStored;
      controller.enqueue(photo.subarray(half));
      controller.close();
    },
  });
  const uploaded = await upload(body, { 'content-type': 'image/png', 'x-sessiond-sha256': sha256Hex(photo) });
  onChunk = undefined;
  assert.is(uploaded.status, 201, JSON.stringify(uploaded.body));
  const ref = { sha256: sha256Hex(photo), size: photo.length, mediaType: 'image/png' };
  assert.equal(uploaded.body, ref);
  assert.ok(puts.at(-1)!.length > 1, `the store got the body in chunks (${puts.at(-1)!.length})`);

  const admitted = await admit('ses_r_up1', [
    { type: 'text', text: 'describe this' },
    { type: 'image', blob: ref },
  ]);
  assert.is(admitted.status, 200, JSON.stringify(admitted.body));
  await waitFor(() => read.has('ses_r_up1'), { what: 'the turn to read the photo', timeoutMs: 30_000 });
  const got = read.get('ses_r_up1')!;
  assert.is(got.length, 1);
  assert.ok(got[0]!.equals(photo), 'the runner read the photo whole');

  // the grant is ta's: tb naming the same hash in its own session is refused, and no turn reads it
  const stolen = await admit('ses_r_up2', [{ type: 'image', blob: ref }], TB);
  assert.is(stolen.status, 400, JSON.stringify(stolen.body));
  assert.match(stolen.body.error.message, 'not yours to use');
  assert.not.ok(read.has('ses_r_up2'));
  // once tb uploads the bytes itself, it may
  assert.is((await upload(photo, { 'content-type': 'image/png' }, TB)).status, 201);
  assert.is((await admit('ses_r_up2', [{ type: 'image', blob: ref }], TB)).status, 200);
});

test('upload - a Content-Length over the limit is refused with 413 before the body is read', async () => {
  const before = puts.length;
  const status = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    // a client that says 9 MiB and sends only the first bytes: the answer comes without the rest
    const req = httpRequest(new URL('/v1/blobs', gw.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${TA}`, 'content-type': 'image/png', 'content-length': String(MAX + 1024 * 1024) },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on('error', reject);
    req.write(pngBytes(1024));
  });
  assert.is(status.status, 413);
  const error = JSON.parse(status.body).error;
  assert.is(error.code, 'payload_too_large');
  assert.match(error.message, `limit of ${MAX} bytes`);
  assert.is(puts.length, before, 'the store was not asked');
});

test('upload - a body with no length is refused with 413 as it passes the limit', async () => {
  let sent = 0;
  const chunk = pngBytes(1024 * 1024, 7);
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      // up to half the limit past it, unless the gateway stops it first: what comes after the answer
      // stays within what the gateway drains (LINGER_MAX_BYTES, 8 MB); past that it cuts the
      // connection and a client still writing may lose the answer (refused-body-close.test.ts)
      if (sent > MAX + MAX / 2) return controller.close();
      sent += chunk.length;
      controller.enqueue(chunk);
    },
  });
  const refused = await upload(body, { 'content-type': 'image/png' }).catch((err: unknown): Reply => ({ status: 0, body: { err: String(err) } }));
  assert.is(refused.status, 413, JSON.stringify(refused.body));
  assert.is(refused.body.error.code, 'payload_too_large');
  assert.match(refused.body.error.message, `limit of ${MAX} bytes`);
});

test('upload - wrong media type, missing type, a form, a wrong or malformed hash: 4xx saying what to fix', async () => {
  const photo = pngBytes(200_000, 9);
  const jpeg = await upload(photo, { 'content-type': 'image/jpeg' });
  assert.equal([jpeg.status, jpeg.body.error.code], [400, 'invalid_payload']);
  assert.match(jpeg.body.error.message, 'media type does not match');

  const untyped = await fetch(new URL('/v1/blobs', gw.url), { method: 'POST', headers: { authorization: `Bearer ${TA}` }, body: new Uint8Array(photo) });
  assert.is(untyped.status, 415);
  assert.match(((await untyped.json()) as Reply['body']).error.message, 'Content-Type');

  const form = await upload(photo, { 'content-type': 'application/x-www-form-urlencoded' });
  assert.is(form.status, 415);
  assert.match(form.body.error.message, '--data-binary');

  const other = sha256Hex(pngBytes(10));
  const wrong = await upload(photo, { 'content-type': 'image/png', 'x-sessiond-sha256': other });
  assert.equal([wrong.status, wrong.body.error.code], [400, 'invalid_payload']);
  assert.match(wrong.body.error.message, `hash to ${sha256Hex(photo)}, not ${other}`);
  const wrongQuery = await upload(photo, { 'content-type': 'image/png' }, TA, `?sha256=${other}`);
  assert.is(wrongQuery.status, 400);

  const malformed = await upload(photo, { 'content-type': 'image/png', 'x-sessiond-sha256': 'abc' });
  assert.equal([malformed.status, malformed.body.error.code], [400, 'invalid_id']);

  const right = await upload(photo, { 'content-type': 'image/png' }, TA, `?sha256=${sha256Hex(photo)}`);
  assert.is(right.status, 201);
});

test('upload - a body that stalls is refused with 408 after the body timeout', async () => {
  const g = await startGateway({ sessions: sessiond, port: 0, bodyTimeoutMs: 300 });
  try {
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(new URL('/v1/blobs', g.url), { method: 'POST', headers: { 'content-type': 'image/png', 'content-length': '100000' } });
      req.on('response', (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: text }));
      });
      req.on('error', reject);
      req.write(pngBytes(1000)); // and nothing more
    });
    assert.is(answer.status, 408);
    assert.match(JSON.parse(answer.body).error.message, 'No bytes of the upload arrived for 300 ms');
  } finally {
    await g.close();
  }
});

test('upload - a token without the prompt scope is refused with 403', async () => {
  const tokens = { tokens: [{ name: 'reader', token: 'reader-token-0123456789abcdef', sessions: '*', scopes: ['read'] }] };
  const g = await startGateway({ sessions: sessiond, port: 0, tokens: parseTokens(JSON.stringify(tokens), 'test') });
  try {
    const res = await fetch(new URL('/v1/blobs', g.url), {
      method: 'POST',
      headers: { authorization: 'Bearer reader-token-0123456789abcdef', 'content-type': 'image/png' },
      body: new Uint8Array(pngBytes(100)),
    });
    assert.is(res.status, 403);
    assert.match(((await res.json()) as Reply['body']).error.message, 'scope prompt');
  } finally {
    await g.close();
  }
});

test.run();
