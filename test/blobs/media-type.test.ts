// A declared media type against the bytes' signature: the checked types refuse other bytes (saying
// what they are), unknown types pass, parameters and case do not matter, a malformed type is refused.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../../src/errors.ts';
import { CHECKED_MEDIA_TYPES, SIGNATURE_BYTES, essenceOf, mediaTypeMismatch, sniffMediaType } from '../../src/blobs/media-type.ts';
import { expectCode } from '../../src/testing/fixtures.ts';

const bytes = (...parts: (number[] | string)[]) => Uint8Array.from(parts.flatMap((p) => (typeof p === 'string' ? [...p].map((c) => c.charCodeAt(0)) : p)));

const SAMPLES: Record<string, Uint8Array> = {
  'image/png': bytes([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], [0, 0, 0, 13], 'IHDR'),
  'image/jpeg': bytes([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10], 'JFIF', [0]),
  'image/gif': bytes('GIF89a', [1, 0, 1, 0, 0x80, 0]),
  'image/webp': bytes('RIFF', [0x24, 0x08, 0, 0], 'WEBPVP8 '),
  'application/pdf': bytes('%PDF-1.7\n%âãÏÓ'),
};

test('media type - each checked type accepts its own signature and refuses every other, naming what the bytes are', () => {
  assert.equal([...CHECKED_MEDIA_TYPES].sort(), Object.keys(SAMPLES).sort());
  for (const [declared, own] of Object.entries(SAMPLES)) {
    assert.is(mediaTypeMismatch(declared, own), undefined, `${declared} accepts its own bytes`);
    assert.is(sniffMediaType(own), declared);
    for (const [actual, other] of Object.entries(SAMPLES)) {
      if (actual === declared) continue;
      const why = mediaTypeMismatch(declared, other);
      assert.ok(why, `${declared} refuses ${actual}'s bytes`);
      assert.match(why!, `declared ${declared}`);
      assert.match(why!, `which is ${actual}`);
    }
  }
});

test('media type - GIF87a too; a WebP needs WEBP at byte 8, not only RIFF (a WAV is RIFF too)', () => {
  assert.is(mediaTypeMismatch('image/gif', bytes('GIF87a', [0, 0])), undefined);
  const wav = bytes('RIFF', [0x24, 0x08, 0, 0], 'WAVEfmt ');
  assert.match(mediaTypeMismatch('image/webp', wav)!, 'bytes starting 52 49 46 46');
  assert.is(sniffMediaType(wav), undefined);
});

test('media type - text, too-short and empty content is refused for a checked type, saying so', () => {
  assert.match(mediaTypeMismatch('image/png', bytes('hello, world'))!, 'bytes starting 68 65 6c 6c');
  assert.match(mediaTypeMismatch('image/png', new Uint8Array(0))!, 'no bytes at all');
  assert.ok(mediaTypeMismatch('image/png', SAMPLES['image/png']!.subarray(0, 4)), 'half a signature is not one');
  assert.ok(SIGNATURE_BYTES >= 12, 'enough bytes for WebP');
});

test('media type - types without a known signature pass whatever the bytes', () => {
  for (const t of ['text/plain', 'application/json', 'application/octet-stream', 'image/svg+xml', 'audio/wav', 'video/mp4']) {
    assert.is(mediaTypeMismatch(t, SAMPLES['image/png']!), undefined, t);
    assert.is(mediaTypeMismatch(t, new Uint8Array(0)), undefined, t);
  }
});

test('media type - case, parameters and common aliases do not matter', () => {
  assert.is(essenceOf('Image/PNG; name="cat.png"'), 'image/png');
  assert.is(mediaTypeMismatch('IMAGE/JPEG;q=1', SAMPLES['image/jpeg']!), undefined);
  assert.is(essenceOf('image/jpg'), 'image/jpeg');
  assert.ok(mediaTypeMismatch('image/jpg', SAMPLES['image/png']!), 'image/jpg is checked as image/jpeg');
  assert.is(mediaTypeMismatch('application/x-pdf', SAMPLES['application/pdf']!), undefined);
});

test('media type - a string that is not a media type is refused, saying what one looks like', () => {
  for (const bad of ['', 'png', 'image/', '/png', 'image png', 'image/png/x', 42 as unknown as string]) {
    expectCode(() => essenceOf(bad), ErrorCode.InvalidPayload, 'type/subtype');
    expectCode(() => mediaTypeMismatch(bad, SAMPLES['image/png']!), ErrorCode.InvalidPayload);
  }
});

test.run();
