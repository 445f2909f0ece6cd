/**
 * Large prompt parts at admission on the embedded log: an inline image or file over 64 KiB is stored
 * in the SQLite file's blob table and its reference goes in the event; references a client sends are
 * checked; bad input is refused saying what was wrong.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEngine, type Engine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { ErrorCode } from '../../src/errors.ts';
import { expectCode } from '../../src/testing/fixtures.ts';
import { sha256Hex } from '../../src/blobs/blob-store.ts';
import { INLINE_PART_BYTES, promptText } from '../../src/events/prompt.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import type { SessionLimits } from '../../src/input/limits.ts';
import { tempDir } from '../support/tmp.ts';
import { pngBytes } from '../support/png.ts';

async function withEngine(fn: (e: Engine) => Promise<void>, limits: Partial<SessionLimits> = {}): Promise<void> {
  const tmp = tempDir('sessiond-blob-parts-');
  const e = await openEngine({ file: tmp.file('s.db'), runner: echoRunner(), limits });
  try {
    await fn(e);
  } finally {
    await e.close();
    tmp.remove();
  }
}

const admitted = async (e: Engine, sessionId: string) =>
  (await e.log.readSession(sessionId)).filter((x): x is SessionEvent<'input.admitted'> => x.type === 'input.admitted').at(-1)!.payload;

test('blob parts - a 6 MB inline image is stored beside the log and the event holds its reference; a small one stays inline', async () => {
  await withEngine(async (e) => {
    const big = pngBytes(6_000_000);
    const small = pngBytes(1000, 2);
    const receipt = await e.admit('ses_big', {
      id: 'inp_1',
      prompt: [
        { type: 'text', text: 'describe this' },
        { type: 'image', data: big.toString('base64'), mediaType: 'image/png' },
        { type: 'image', data: small.toString('base64'), mediaType: 'image/png' },
        { type: 'file', data: pngBytes(INLINE_PART_BYTES + 1, 3).toString('base64'), mediaType: 'image/png', filename: 'scan.png' },
      ],
      wake: false,
    });
    assert.ok(receipt.created);
    const { prompt } = await admitted(e, 'ses_big');
    assert.ok(Array.isArray(prompt));
    const ref = { sha256: sha256Hex(big), size: 6_000_000, mediaType: 'image/png' };
    assert.equal(prompt[1], { type: 'image', blob: ref });
    assert.equal(prompt[2], { type: 'image', data: small.toString('base64'), mediaType: 'image/png' }, 'at most INLINE_PART_BYTES stays in the event');
    assert.equal(prompt[3], {
      type: 'file',
      blob: { sha256: sha256Hex(pngBytes(INLINE_PART_BYTES + 1, 3)), size: INLINE_PART_BYTES + 1, mediaType: 'image/png' },
      filename: 'scan.png',
    });
    assert.ok(Buffer.from(await e.blobs!.get(ref.sha256)).equals(big), 'the blob holds the whole image');
    assert.match(promptText(prompt), `[image image/png, 6000000 bytes, stored as blob ${ref.sha256.slice(0, 12)}]`);
    // an exact resend (the same bytes again) is the same admission
    const again = await e.admit('ses_big', {
      id: 'inp_1',
      prompt: [
        { type: 'text', text: 'describe this' },
        { type: 'image', data: big.toString('base64'), mediaType: 'image/png' },
        { type: 'image', data: small.toString('base64'), mediaType: 'image/png' },
        { type: 'file', data: pngBytes(INLINE_PART_BYTES + 1, 3).toString('base64'), mediaType: 'image/png', filename: 'scan.png' },
      ],
      wake: false,
    });
    assert.equal([again.created, again.admittedSeq], [false, receipt.admittedSeq]);
  });
});

test('blob parts - a reference to a stored blob is admitted as it is; to a missing one, refused naming it', async () => {
  await withEngine(async (e) => {
    const bytes = pngBytes(200_000);
    const ref = await e.blobs!.put(bytes, { mediaType: 'image/png' });
    await e.admit('ses_ref', { prompt: [{ type: 'image', blob: ref }], wake: false });
    assert.equal((await admitted(e, 'ses_ref')).prompt, [{ type: 'image', blob: ref }]);
    const missing = { sha256: 'ab'.repeat(32), size: 10, mediaType: 'image/png' };
    await expectCode(
      e.admit('ses_ref', {
        prompt: [
          { type: 'text', text: 'and' },
          { type: 'image', blob: missing },
        ],
        wake: false,
      }),
      ErrorCode.InvalidOption,
      `prompt part 1 (image) references blob ${'ab'.repeat(32)}, which is not stored: store its bytes first`,
    );
    await expectCode(
      e.admit('ses_ref', { prompt: [{ type: 'image', blob: { ...ref, size: ref.size + 1 } }], wake: false }),
      ErrorCode.InvalidOption,
      `says blob ${ref.sha256} is 200001 bytes, but it is 200000: give its real size`,
    );
    await expectCode(
      e.admit('ses_ref', { prompt: [{ type: 'file', blob: { ...ref, mediaType: 'application/pdf' } }], wake: false }),
      ErrorCode.InvalidPayload,
      "prompt part 0 (file): The blob's media type does not match its bytes: declared application/pdf but the content is bytes starting 89 50 4e 47",
    );
    assert.is((await e.log.readSession('ses_ref')).filter((x) => x.type === 'input.admitted').length, 1, 'nothing refused was admitted');
  });
});

test('blob parts - bytes that are not of their declared type are refused, and nothing is stored', async () => {
  await withEngine(async (e) => {
    const jpeg = pngBytes(100_000);
    jpeg.set([0xff, 0xd8, 0xff, 0xe0], 0);
    await expectCode(
      e.admit('ses_bad', { prompt: [{ type: 'image', data: jpeg.toString('base64'), mediaType: 'image/png' }], wake: false }),
      ErrorCode.InvalidPayload,
      "Invalid input: prompt part 0 (image): The blob's media type does not match its bytes: declared image/png but the content is bytes starting ff d8 ff e0",
    );
    assert.is(await e.blobs!.has(sha256Hex(jpeg)), false);
    assert.equal(await e.log.readSession('ses_bad'), []);
  });
});

test('blob parts - an image over maxBlobBytes is refused with the limit; the pending blob bytes of a session are bounded', async () => {
  await withEngine(
    async (e) => {
      await expectCode(
        e.admit('ses_lim', { prompt: [{ type: 'image', data: pngBytes(300_001).toString('base64'), mediaType: 'image/png' }], wake: false }),
        ErrorCode.PayloadTooLarge,
        'prompt part 0 (image) is 300001 bytes, over the limit of 300000 bytes for one image or file',
      );
      await e.admit('ses_lim', { prompt: [{ type: 'image', data: pngBytes(300_000, 1).toString('base64'), mediaType: 'image/png' }], wake: false });
      await e.admit('ses_lim', { prompt: [{ type: 'image', data: pngBytes(200_000, 2).toString('base64'), mediaType: 'image/png' }], wake: false });
      await expectCode(
        e.admit('ses_lim', { prompt: [{ type: 'image', data: pngBytes(200_000, 3).toString('base64'), mediaType: 'image/png' }], wake: false }),
        ErrorCode.LimitExceeded,
        "its 200000 bytes of images and files would bring the session's pending ones to 700000 bytes, over the limit of 600000 bytes per session",
      );
    },
    { maxBlobBytes: 300_000, maxPendingBlobBytes: 600_000 },
  );
});

test.run();
