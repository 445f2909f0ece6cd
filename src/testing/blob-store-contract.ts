/**
 * The BlobStore contract (src/blobs/blob-store.ts), written once and run against every
 * implementation:
 *
 *   blobStoreContract('sqlite', async () => ({ store, cleanup })).run();
 *
 * Each test's content is its own (a unique tag in the bytes), so a store shared by the tests works.
 */
import { createHash } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { BlobStore, StoredBlob } from '../blobs/blob-store.ts';
import type { ManualClock } from '../clock.ts';
import { ErrorCode } from '../errors.ts';
import { expectCode, uniqueId } from './fixtures.ts';

export interface BlobStoreFixture {
  store: BlobStore;
  /** The store's clock (`storedAt`), moved by the tests of last-put times. */
  clock: ManualClock;
  cleanup: () => Promise<void>;
}

const MiB = 1024 * 1024;
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const text = (s: string) => new TextEncoder().encode(s);

/** `size` bytes that look random (SHA-256 in counter mode over a seed): incompressible, the same for the same seed. */
export function pseudoRandomBytes(size: number, seed: string): Uint8Array {
  const out = new Uint8Array(size);
  for (let at = 0, i = 0; at < size; at += 32, i++)
    out.set(
      createHash('sha256')
        .update(`${seed}:${i}`)
        .digest()
        .subarray(0, Math.min(32, size - at)),
      at,
    );
  return out;
}

/** A PNG's signature and a little after it (enough for the check; not a whole image). */
const png = (tag: string) => concat(Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13), text(`IHDR ${tag}`));
const jpeg = (tag: string) => concat(Uint8Array.of(0xff, 0xd8, 0xff, 0xe0, 0, 16), text(`JFIF ${tag}`));

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** `bytes` as an async stream of chunks of `size` bytes (the last shorter). */
async function* chunked(bytes: Uint8Array, size: number): AsyncIterable<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.slice(at, at + size);
  if (bytes.length === 0) yield new Uint8Array(0);
}

async function listed(store: BlobStore): Promise<Map<string, StoredBlob>> {
  const all = new Map<string, StoredBlob>();
  for await (const b of store.list()) all.set(b.sha256, b);
  return all;
}

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of chunks) parts.push(c);
  return concat(...parts);
}

export function blobStoreContract(name: string, open: () => Promise<BlobStoreFixture>) {
  const s = suite<{ fx: BlobStoreFixture }>(`BlobStore contract (${name})`);
  s.before.each(async (ctx) => {
    ctx.fx = await open();
  });
  s.after.each(async (ctx) => {
    await ctx.fx.cleanup();
  });

  const sizes: [string, (tag: string) => Uint8Array][] = [
    ['0 bytes', () => new Uint8Array(0)],
    ['a few bytes', (tag) => text(`hello ${tag}`)],
    ['6 MB of random bytes', (tag) => pseudoRandomBytes(6 * 1000 * 1000, tag)],
  ];
  for (const [what, make] of sizes) {
    s(`blob store - ${what} round-trip whole and streamed, named by their SHA-256, put as bytes or as a stream with or without the hash`, async ({ fx }) => {
      const bytes = make(uniqueId('rt'));
      const ref = await fx.store.put(bytes, { mediaType: 'application/octet-stream' });
      assert.equal(ref, { sha256: sha(bytes), size: bytes.length, mediaType: 'application/octet-stream' });
      assert.ok(await fx.store.has(ref.sha256));
      const back = await fx.store.get(ref.sha256);
      assert.is(back.length, bytes.length);
      assert.ok(Buffer.from(back).equals(Buffer.from(bytes)), 'the same bytes');
      assert.ok(Buffer.from(await collect(fx.store.read(ref.sha256))).equals(Buffer.from(bytes)), 'the same bytes, streamed');
      assert.is(await fx.store.delete(ref.sha256), true);
      // streamed in odd-sized chunks, without and with the hash: the same blob
      assert.equal(await fx.store.put(chunked(bytes, 100_003), { mediaType: 'application/octet-stream' }), ref);
      assert.ok(Buffer.from(await fx.store.get(ref.sha256)).equals(Buffer.from(bytes)));
      await fx.store.delete(ref.sha256);
      assert.equal(await fx.store.put(chunked(bytes, 65_536), { mediaType: 'application/octet-stream', expectedSha256: ref.sha256 }), ref);
      assert.ok(Buffer.from(await fx.store.get(ref.sha256)).equals(Buffer.from(bytes)));
    });
  }

  s('blob store - a ranged read gives just the bytes asked for: from the start, across chunk boundaries, to the end, none', async ({ fx }) => {
    const bytes = pseudoRandomBytes(1_300_000, uniqueId('range'));
    const { sha256 } = await fx.store.put(chunked(bytes, 100_003), { mediaType: 'application/octet-stream' });
    const size = bytes.length;
    const cases: [string, { offset: number; length?: number }, number, number][] = [
      ['the first bytes', { offset: 0, length: 10 }, 0, 10],
      ['a middle part spanning chunk boundaries', { offset: 200_000, length: 400_000 }, 200_000, 600_000],
      ['a part across the 1 MiB mark', { offset: MiB - 7, length: 70_000 }, MiB - 7, MiB - 7 + 70_000],
      ['the last byte', { offset: size - 1, length: 1 }, size - 1, size],
      ['the rest, without a length', { offset: size - 123_456 }, size - 123_456, size],
      ['the whole, from 0', { offset: 0 }, 0, size],
      ['none, in the middle', { offset: 500, length: 0 }, 500, 500],
      ['none, at the end', { offset: size }, size, size],
    ];
    for (const [what, range, from, to] of cases) {
      const got = await collect(fx.store.read(sha256, range));
      assert.is(got.length, to - from, what);
      assert.ok(Buffer.from(got).equals(Buffer.from(bytes.subarray(from, to))), `${what}: the same bytes`);
    }
    // in a row, as the blob command reads it
    const parts: Uint8Array[] = [];
    for (let at = 0; at < size; at += 512 * 1024) parts.push(await collect(fx.store.read(sha256, { offset: at, length: Math.min(512 * 1024, size - at) })));
    assert.ok(Buffer.from(concat(...parts)).equals(Buffer.from(bytes)), 'chunk after chunk, the whole blob');
    const small = await fx.store.put(text(`small ${uniqueId('range')}`), { mediaType: 'text/plain' });
    assert.is(
      Buffer.from(await collect(fx.store.read(small.sha256, { offset: 6 }))).toString(),
      Buffer.from(await fx.store.get(small.sha256))
        .subarray(6)
        .toString(),
    );
    const empty = await fx.store.put(new Uint8Array(0), { mediaType: 'application/octet-stream' });
    assert.is((await collect(fx.store.read(empty.sha256, { offset: 0 }))).length, 0, 'an empty blob, from 0');
  });

  s('blob store - a bad range is refused saying what to give; a ranged read of a blob not there is not found', async ({ fx }) => {
    const bytes = pseudoRandomBytes(300_000, uniqueId('badrange'));
    const { sha256 } = await fx.store.put(bytes, { mediaType: 'application/octet-stream' });
    const bad: [unknown, string][] = [
      [{ offset: -1 }, 'whole numbers'],
      [{ offset: 1.5, length: 2 }, 'whole numbers'],
      [{ offset: Number.NaN }, 'whole numbers'],
      [{ offset: '3' }, 'whole numbers'],
      [{ offset: 0, length: -1 }, 'whole numbers'],
      [{ length: 3 }, 'whole numbers'],
      [null, 'whole numbers'],
      [{ offset: bytes.length + 1 }, `${bytes.length} bytes`],
      [{ offset: bytes.length - 10, length: 11 }, 'pass the end'],
    ];
    for (const [range, says] of bad) {
      await expectCode(collect(fx.store.read(sha256, range as { offset: number })), ErrorCode.InvalidOption, says);
    }
    const missing = sha(text(`never ${uniqueId('badrange')}`));
    await expectCode(collect(fx.store.read(missing, { offset: 0, length: 1 })), ErrorCode.NotFound, missing);
    await expectCode(collect(fx.store.read('nope', { offset: 0 })), ErrorCode.InvalidId);
    // deleted, then stored again: read from the new copy
    await collect(fx.store.read(sha256, { offset: 1000, length: 10 }));
    await fx.store.delete(sha256);
    await expectCode(collect(fx.store.read(sha256, { offset: 1000, length: 10 })), ErrorCode.NotFound, sha256);
    await fx.store.put(chunked(bytes, 77_777), { mediaType: 'application/octet-stream', expectedSha256: sha256 });
    assert.ok(Buffer.from(await collect(fx.store.read(sha256, { offset: 260_000, length: 10_000 }))).equals(Buffer.from(bytes.subarray(260_000, 270_000))));
  });

  s('blob store - putting the same content again is idempotent: one blob, listed once, the first media type kept', async ({ fx }) => {
    const bytes = text(`same ${uniqueId('idem')}`);
    const first = await fx.store.put(bytes, { mediaType: 'text/plain' });
    const again = await fx.store.put(bytes, { mediaType: 'text/plain' });
    const streamed = await fx.store.put(chunked(bytes, 3), { mediaType: 'text/markdown', expectedSha256: first.sha256 });
    assert.equal(again, first);
    assert.equal(streamed, { ...first, mediaType: 'text/markdown' }, 'a reference carries the media type it was put with');
    const all = await listed(fx.store);
    assert.is(all.get(first.sha256)?.mediaType, 'text/plain', 'the stored blob keeps the first');
    assert.is(all.get(first.sha256)?.size, bytes.length);
    // two puts of new content at once: both succeed, one blob
    const racing = pseudoRandomBytes(700_000, uniqueId('race'));
    const refs = await Promise.all([
      fx.store.put(racing, { mediaType: 'application/octet-stream' }),
      fx.store.put(chunked(racing, 50_000), { mediaType: 'application/octet-stream', expectedSha256: sha(racing) }),
      fx.store.put(chunked(racing, 70_000), { mediaType: 'application/octet-stream' }),
    ]);
    assert.equal(new Set(refs.map((r) => r.sha256)), new Set([sha(racing)]));
    assert.ok(Buffer.from(await fx.store.get(sha(racing))).equals(Buffer.from(racing)));
  });

  s('blob store - bytes that do not match the hash given are refused, naming both hashes, and nothing is stored', async ({ fx }) => {
    const bytes = text(`mine ${uniqueId('mis')}`);
    const other = sha(text(`not mine ${uniqueId('mis')}`));
    for (const source of [bytes, chunked(bytes, 4)]) {
      const err = await expectCode(fx.store.put(source, { mediaType: 'text/plain', expectedSha256: other }), ErrorCode.InvalidPayload, other);
      assert.match(err.message, sha(bytes));
    }
    const big = pseudoRandomBytes(1_500_000, uniqueId('mis'));
    await expectCode(fx.store.put(chunked(big, 200_000), { mediaType: 'application/octet-stream', expectedSha256: other }), ErrorCode.InvalidPayload);
    assert.is(await fx.store.has(other), false);
    assert.is(await fx.store.has(sha(bytes)), false);
    assert.is(await fx.store.has(sha(big)), false);
    await expectCode(fx.store.put(bytes, { mediaType: 'text/plain', expectedSha256: 'ABC' }), ErrorCode.InvalidId, 'expectedSha256');
  });

  s('blob store - an upload over the limit is refused before it is read whole (the stream is not consumed further), and nothing is stored', async ({ fx }) => {
    const chunk = 64 * 1024;
    let pulled = 0;
    const tag = uniqueId('big');
    async function* endless(): AsyncIterable<Uint8Array> {
      // would yield 1 GiB
      for (let i = 0; i < (1024 * MiB) / chunk; i++) {
        pulled++;
        yield pseudoRandomBytes(chunk, `${tag}:${i}`);
      }
    }
    const limit = MiB;
    const first = await expectCode(
      fx.store.put(endless(), { mediaType: 'application/octet-stream', maxBytes: limit }),
      ErrorCode.PayloadTooLarge,
      `${limit} bytes`,
    );
    assert.ok(pulled <= limit / chunk + 2, `read ${pulled} chunks of ${chunk} bytes for a limit of ${limit}`);
    assert.ok(first.details['read'] !== undefined);
    pulled = 0;
    const expectedSha256 = sha(text('whatever'));
    await expectCode(fx.store.put(endless(), { mediaType: 'application/octet-stream', maxBytes: limit, expectedSha256 }), ErrorCode.PayloadTooLarge);
    assert.ok(pulled <= limit / chunk + 2, `with the hash given (streamed into the store): read ${pulled} chunks`);
    assert.is(await fx.store.has(expectedSha256), false);
    const whole = pseudoRandomBytes(limit + 1, tag);
    await expectCode(fx.store.put(whole, { mediaType: 'application/octet-stream', maxBytes: limit }), ErrorCode.PayloadTooLarge);
    assert.is(await fx.store.has(sha(whole)), false);
    assert.equal(
      (await fx.store.put(whole.subarray(0, limit), { mediaType: 'application/octet-stream', maxBytes: limit })).size,
      limit,
      'exactly the limit is accepted',
    );
    await expectCode(fx.store.put(whole, { mediaType: 'application/octet-stream', maxBytes: -1 }), ErrorCode.InvalidOption, 'maxBytes');
  });

  s('blob store - a media type its bytes contradict is refused, saying what the bytes are; nothing is stored', async ({ fx }) => {
    const tag = uniqueId('sig');
    const photo = jpeg(tag);
    const err = await expectCode(fx.store.put(photo, { mediaType: 'image/png' }), ErrorCode.InvalidPayload, 'image/png');
    assert.match(err.message, 'image/jpeg');
    await expectCode(fx.store.put(chunked(photo, 2), { mediaType: 'image/png', expectedSha256: sha(photo) }), ErrorCode.InvalidPayload, 'image/jpeg');
    await expectCode(fx.store.put(text(`%PDF? no ${tag}`), { mediaType: 'application/pdf' }), ErrorCode.InvalidPayload, 'application/pdf');
    await expectCode(fx.store.put(new Uint8Array(0), { mediaType: 'image/png' }), ErrorCode.InvalidPayload, 'no bytes');
    assert.is(await fx.store.has(sha(photo)), false);
    await expectCode(fx.store.put(photo, { mediaType: 'a photo' }), ErrorCode.InvalidPayload, 'type/subtype');
    // the right type, or one without a signature, passes
    assert.is((await fx.store.put(photo, { mediaType: 'image/jpeg' })).sha256, sha(photo));
    assert.is((await fx.store.put(png(tag), { mediaType: 'IMAGE/PNG; name=x.png' })).mediaType, 'IMAGE/PNG; name=x.png');
    assert.is((await fx.store.put(photo, { mediaType: 'application/octet-stream' })).sha256, sha(photo));
  });

  s('blob store - a blob never stored is not found, the error naming its hash; a malformed hash is refused', async ({ fx }) => {
    const missing = sha(text(`never ${uniqueId('nf')}`));
    assert.is(await fx.store.has(missing), false);
    await expectCode(fx.store.get(missing), ErrorCode.NotFound, missing);
    await expectCode(collect(fx.store.read(missing)), ErrorCode.NotFound, missing);
    assert.is(await fx.store.delete(missing), false);
    for (const bad of ['', 'xyz', missing.toUpperCase(), `${missing}0`, '../../etc/passwd']) {
      await expectCode(fx.store.get(bad), ErrorCode.InvalidId, '64 lower-case hex');
      await expectCode(fx.store.has(bad), ErrorCode.InvalidId);
      await expectCode(fx.store.delete(bad), ErrorCode.InvalidId);
    }
  });

  s('blob store - delete removes a blob (and only it); it can be stored again', async ({ fx }) => {
    const tag = uniqueId('del');
    const [a, b] = [text(`a ${tag}`), pseudoRandomBytes(600_000, tag)];
    const [ra, rb] = [await fx.store.put(a, { mediaType: 'text/plain' }), await fx.store.put(b, { mediaType: 'application/octet-stream' })];
    assert.is(await fx.store.delete(rb.sha256), true);
    assert.is(await fx.store.has(rb.sha256), false);
    await expectCode(fx.store.get(rb.sha256), ErrorCode.NotFound, rb.sha256);
    assert.is(await fx.store.delete(rb.sha256), false, 'a second delete finds nothing');
    assert.ok(Buffer.from(await fx.store.get(ra.sha256)).equals(Buffer.from(a)), 'the other blob is untouched');
    assert.equal(await fx.store.put(chunked(b, 100_000), { mediaType: 'application/octet-stream', expectedSha256: rb.sha256 }), rb);
    assert.ok(Buffer.from(await fx.store.get(rb.sha256)).equals(Buffer.from(b)), 'stored again after its delete');
  });

  s('blob store - list gives every stored blob once, with size, media type and when it was stored; a deleted one is gone', async ({ fx }) => {
    const tag = uniqueId('list');
    const blobs = [text(`one ${tag}`), png(tag), pseudoRandomBytes(300_000, tag)];
    const types = ['text/plain', 'image/png', 'application/octet-stream'];
    const refs = [];
    for (let i = 0; i < blobs.length; i++) refs.push(await fx.store.put(blobs[i]!, { mediaType: types[i]! }));
    let all = await listed(fx.store);
    for (const ref of refs) {
      const got = all.get(ref.sha256);
      assert.ok(got, `${ref.sha256} listed`);
      assert.equal({ sha256: got.sha256, size: got.size, mediaType: got.mediaType }, ref);
      assert.ok(Number.isFinite(got.storedAt) && got.storedAt > 1_600_000_000_000, `stored at a time (${got.storedAt})`);
    }
    const seen: string[] = [];
    for await (const b of fx.store.list()) seen.push(b.sha256);
    assert.is(seen.length, new Set(seen).size, 'each once');
    await fx.store.delete(refs[1]!.sha256);
    all = await listed(fx.store);
    assert.is(all.has(refs[1]!.sha256), false);
    assert.ok(all.has(refs[0]!.sha256) && all.has(refs[2]!.sha256));
  });

  s('blob store - a put of stored content moves its storedAt to now (an admission re-using it makes it young again)', async ({ fx }) => {
    const tag = uniqueId('touch');
    const bytes = pseudoRandomBytes(300_000, tag);
    const first = fx.clock.now();
    const ref = await fx.store.put(bytes, { mediaType: 'application/octet-stream' });
    assert.is((await listed(fx.store)).get(ref.sha256)?.storedAt, first);
    await fx.clock.advance(3_600_000);
    assert.equal(await fx.store.put(chunked(bytes, 100_000), { mediaType: 'application/octet-stream', expectedSha256: ref.sha256 }), ref);
    assert.is((await listed(fx.store)).get(ref.sha256)?.storedAt, first + 3_600_000, 'a streamed put of the same content');
    await fx.clock.advance(1_000);
    await fx.store.put(bytes, { mediaType: 'application/octet-stream' });
    assert.is((await listed(fx.store)).get(ref.sha256)?.storedAt, first + 3_601_000, 'a whole put of the same content');
    assert.ok(Buffer.from(await fx.store.get(ref.sha256)).equals(Buffer.from(bytes)), 'the bytes are unchanged');
  });

  s('blob store - deleteIfIdle removes a blob last put before the time, keeps one put since, and finds nothing twice', async ({ fx }) => {
    const tag = uniqueId('idle');
    const [old, young] = [text(`old ${tag}`), text(`young ${tag}`)];
    const ro = await fx.store.put(old, { mediaType: 'text/plain' });
    await fx.clock.advance(10_000);
    const cut = fx.clock.now();
    const ry = await fx.store.put(young, { mediaType: 'text/plain' });
    assert.is(await fx.store.deleteIfIdle(ry.sha256, cut), false, 'put at the cut: kept');
    assert.ok(await fx.store.has(ry.sha256));
    assert.is(await fx.store.deleteIfIdle(ro.sha256, cut), true, 'put before the cut: removed');
    assert.is(await fx.store.has(ro.sha256), false);
    await expectCode(fx.store.get(ro.sha256), ErrorCode.NotFound, ro.sha256);
    assert.is(await fx.store.deleteIfIdle(ro.sha256, cut), false, 'a second time finds nothing');
    // a blob re-used (put again) after it went idle is young again: kept
    await fx.clock.advance(10_000);
    await fx.store.put(young, { mediaType: 'text/plain' });
    assert.is(await fx.store.deleteIfIdle(ry.sha256, cut + 5_000), false, 'put again since: kept');
    assert.equal(await fx.store.put(old, { mediaType: 'text/plain' }), ro, 'stored again after its removal');
    assert.ok(Buffer.from(await fx.store.get(ro.sha256)).equals(Buffer.from(old)));
    await expectCode(fx.store.deleteIfIdle('nope', cut), ErrorCode.InvalidId);
  });

  s('blob store - touch marks a stored blob as put now, so deleteIfIdle keeps it; false for one not stored', async ({ fx }) => {
    const tag = uniqueId('mark');
    const bytes = pseudoRandomBytes(300_000, tag);
    const ref = await fx.store.put(bytes, { mediaType: 'application/octet-stream' });
    await fx.clock.advance(7_200_000);
    const cut = fx.clock.now() - 3_600_000;
    assert.is(await fx.store.touch(ref.sha256), true);
    assert.is((await listed(fx.store)).get(ref.sha256)?.storedAt, fx.clock.now(), 'its storedAt is now');
    assert.is(await fx.store.deleteIfIdle(ref.sha256, cut), false, 'touched after the cut: kept');
    assert.ok(Buffer.from(await fx.store.get(ref.sha256)).equals(Buffer.from(bytes)), 'the bytes are unchanged');
    await fx.clock.advance(7_200_000);
    assert.is(await fx.store.deleteIfIdle(ref.sha256, fx.clock.now() - 3_600_000), true, 'idle again later: removed');
    assert.is(await fx.store.touch(ref.sha256), false, 'a removed blob is not brought back');
    assert.is(await fx.store.has(ref.sha256), false);
    assert.is(await fx.store.touch(sha(text(`never stored ${tag}`))), false);
    await expectCode(fx.store.touch('nope'), ErrorCode.InvalidId);
  });

  return s;
}
