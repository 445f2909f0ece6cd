/**
 * `sessiond prompt --image FILE`: a file over the inline limit is streamed to the blob store in
 * chunks (never read whole into base64) and sent as its reference; a small one stays inline; a file
 * that goes missing between the check and the read is a usage error naming it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rmSync, writeFileSync } from 'node:fs';
import { promptFromOptions, readPrompt, type StreamUpload } from '../../src/cli/commands/prompt-parts.ts';
import { sha256Hex } from '../../src/blobs/blob-store.ts';
import { INLINE_PART_BYTES } from '../../src/events/prompt.ts';
import { tempDir } from '../support/tmp.ts';
import { pngBytes } from '../support/png.ts';

test('cli prompt parts - a large file is streamed in chunks to the store and sent by reference; a small one inline', async () => {
  const tmp = tempDir();
  try {
    const large = pngBytes(3 * 1024 * 1024, 2);
    const small = pngBytes(INLINE_PART_BYTES, 4);
    writeFileSync(tmp.file('large.png'), large);
    writeFileSync(tmp.file('small.png'), small);
    const chunks: number[] = [];
    const upload: StreamUpload = async (source, mediaType, size) => {
      let got = 0;
      for await (const chunk of source) {
        chunks.push(chunk.length);
        got += chunk.length;
      }
      assert.is(got, size);
      return { sha256: sha256Hex(large), size, mediaType };
    };
    const draft = promptFromOptions('look', { image: [tmp.file('large.png'), tmp.file('small.png')] });
    const prompt = await readPrompt(draft, upload);
    assert.ok(chunks.length > 1, `read in chunks (${chunks.length})`);
    assert.ok(Math.max(...chunks) < large.length / 4, 'no chunk is the whole file');
    assert.equal(prompt, [
      { type: 'text', text: 'look' },
      { type: 'image', blob: { sha256: sha256Hex(large), size: large.length, mediaType: 'image/png' } },
      { type: 'image', data: small.toString('base64'), mediaType: 'image/png' },
    ]);
  } finally {
    tmp.remove();
  }
});

test('cli prompt parts - the store refusing the bytes names the part and the file', async () => {
  const tmp = tempDir();
  try {
    writeFileSync(tmp.file('doc.pdf'), pngBytes(200_000));
    const { ErrorCode, InvalidInputError } = await import('../../src/errors.ts');
    const refuse: StreamUpload = async () => {
      throw new InvalidInputError('bytes are not a PDF', { code: ErrorCode.InvalidPayload });
    };
    const err = await readPrompt(promptFromOptions('x', { file: [tmp.file('doc.pdf')] }), refuse).then(
      () => undefined,
      (e: Error) => e,
    );
    assert.match(String(err?.message), `prompt part 1 (file) ${tmp.file('doc.pdf')}: bytes are not a PDF`);
    assert.is((err as { code?: string }).code, 'invalid_payload');

    writeFileSync(tmp.file('gone.png'), pngBytes(100));
    const draft = promptFromOptions(undefined, { image: [tmp.file('gone.png')] });
    rmSync(tmp.file('gone.png'));
    const gone = await readPrompt(draft).then(
      () => undefined,
      (e: Error) => e,
    );
    assert.match(String(gone?.message), 'cannot read it (ENOENT)');
  } finally {
    tmp.remove();
  }
});

test.run();
