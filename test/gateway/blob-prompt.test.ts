/**
 * The gateway in front of the embedded worker takes a 6 MB photo as a JSON prompt with base64 bytes
 * under its default body limit: the photo is stored beside the log and the event holds its
 * reference; a body over the limit is refused before it is read whole.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startSessiond, type Sessiond } from '../../src/host.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { DEFAULT_GATEWAY_MAX_BODY_BYTES, startGateway, type Gateway } from '../../src/gateway/server.ts';
import { engineLive } from '../../src/gateway/live.ts';
import { sha256Hex, type BlobStore } from '../../src/blobs/blob-store.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { tempDir } from '../support/tmp.ts';
import { pngBytes } from '../support/png.ts';

const tmp = tempDir();
let sessiond: Sessiond;
let gw: Gateway;

test.before(async () => {
  sessiond = await startSessiond({ db: tmp.file('gw.db'), runner: echoRunner({ steps: 1 }) });
  gw = await startGateway({ sessions: sessiond, live: engineLive(sessiond), port: 0 });
});
test.after(async () => {
  await gw?.close();
  await sessiond?.close();
  tmp.remove();
});

async function post(path: string, body: string) {
  const res = await fetch(new URL(path, gw.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  // biome-ignore lint/suspicious/noExplicitAny: JSON replies read loosely in assertions
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

test('gateway - a 6 MB photo as base64 JSON is admitted under the default body limit, stored beside the log', async () => {
  const photo = pngBytes(6 * 1024 * 1024, 3);
  const body = JSON.stringify({
    prompt: [
      { type: 'text', text: 'describe this' },
      { type: 'image', data: photo.toString('base64'), mediaType: 'image/png' },
    ],
  });
  assert.ok(body.length > 8_000_000 && body.length < DEFAULT_GATEWAY_MAX_BODY_BYTES);
  const admitted = await post('/v1/sessions/ses_gw_photo/inputs', body);
  assert.is(admitted.status, 200, JSON.stringify(admitted.body));
  await sessiond.engine.awaitIdle('ses_gw_photo');
  const event = (await sessiond.engine.log.readSession('ses_gw_photo')).find((e): e is SessionEvent<'input.admitted'> => e.type === 'input.admitted')!;
  assert.equal((event.payload.prompt as unknown[])[1], { type: 'image', blob: { sha256: sha256Hex(photo), size: photo.length, mediaType: 'image/png' } });
  // read back from the session that references it, whole, with its media type, reading the store
  // about once (not once per chunk: a SQLite read loads the whole value each time)
  const store = ((sessiond as { blobs?: BlobStore }).blobs ?? sessiond.engine.blobs)!;
  const read = store.read.bind(store);
  let reads = 0;
  store.read = (sha, range) => (reads++, read(sha, range));
  const got = await fetch(new URL(`/v1/sessions/ses_gw_photo/blobs/${sha256Hex(photo)}`, gw.url));
  assert.equal([got.status, got.headers.get('content-type'), got.headers.get('content-length')], [200, 'image/png', String(photo.length)]);
  assert.ok(Buffer.from(await got.arrayBuffer()).equals(photo), 'the bytes served are the photo');
  store.read = read;
  assert.is(reads, 2, 'the first chunk, then the rest in one read');
  // a session that does not reference it answers 404, as one that does not exist
  assert.is((await post('/v1/sessions/ses_gw_plain/inputs', JSON.stringify({ prompt: 'no photo' }))).status, 200);
  for (const id of ['ses_gw_plain', 'ses_gw_nobody']) {
    const missing = await fetch(new URL(`/v1/sessions/${id}/blobs/${sha256Hex(photo)}`, gw.url));
    assert.is(missing.status, 404, id);
    assert.is(((await missing.json()) as { error: { code: string } }).error.code, 'not_found');
  }
});

test('gateway - a body over the default limit is refused with 413, naming the limit and the flag', async () => {
  const big = `{"prompt":[{"type":"image","mediaType":"image/png","data":"${'A'.repeat(DEFAULT_GATEWAY_MAX_BODY_BYTES)}"}]}`;
  const refused = await post('/v1/sessions/ses_gw_big/inputs', big);
  assert.equal([refused.status, refused.body.error.code], [413, 'payload_too_large']);
  assert.match(refused.body.error.message, `over ${DEFAULT_GATEWAY_MAX_BODY_BYTES} bytes`);
  assert.match(refused.body.error.message, '--max-body-bytes');
});

test.run();
