/** Prompts of parts: what is refused and why, the size they count, their text form, resends by content. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_PROMPT_PARTS, checkPrompt, promptBytes, promptText, samePrompt } from '../../src/events/prompt.ts';
import { parseAdmitRequest } from '../../src/input/admit.ts';
import { isSessiondError, ErrorCode } from '../../src/errors.ts';
import type { PromptPart } from '../../src/events/catalog.ts';

const refused = (prompt: unknown, max = 1000): string => {
  try {
    checkPrompt(prompt, max);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(prompt)}`);
};

test('prompt - every kind of part is accepted as it is; a string prompt too', () => {
  const parts: PromptPart[] = [
    { type: 'text', text: 'hi' },
    { type: 'image', url: 'https://example.com/a.png' },
    { type: 'image', url: 'data:image/png;base64,AAAA', mediaType: 'image/png' },
    { type: 'image', data: 'AAAA', mediaType: 'image/png' },
    { type: 'file', url: 'https://example.com/a.pdf', mediaType: 'application/pdf', filename: 'a.pdf' },
    { type: 'file', data: 'AAAA', mediaType: 'text/csv' },
    { type: 'json', value: { a: [1, 'two', null, true, { b: 2.5 }] } },
  ];
  assert.is(checkPrompt(parts, 10_000), parts);
  assert.is(checkPrompt('plain', 10), 'plain');
});

test('prompt - refusals say which part and what it must hold', () => {
  assert.match(refused(42), 'prompt must be a string or a list of parts like');
  assert.match(refused([]), 'prompt has no parts');
  assert.match(
    refused(
      Array.from({ length: MAX_PROMPT_PARTS + 1 }, () => ({ type: 'text', text: 'x' })),
      100_000,
    ),
    `over the limit of ${MAX_PROMPT_PARTS}`,
  );
  assert.match(refused([{ type: 'text', text: 'ok' }, 'text']), 'prompt part 1 must be an object');
  assert.match(refused([{ type: 'image', url: 'ftp://x/y.png' }]), 'prompt part 0 ("image") is not a valid part: an image is');
  assert.match(refused([{ type: 'image', data: 'AAAA' }]), 'an image is'); // bytes need their media type
  assert.match(refused([{ type: 'file', url: 'https://x/y' }]), 'a file is'); // a file needs its media type
  assert.match(refused([{ type: 'json', value: Number.NaN }]), 'a JSON part is');
  assert.match(refused([{ type: 'json' }]), 'a JSON part is');
  assert.match(refused([{ type: 'video', url: 'https://x' }]), 'type must be "text", "image", "file" or "json"');
  assert.match(refused([{ type: 'text', text: 'a\ud800b' }]), 'prompt part 0 contains an unpaired UTF-16 surrogate at index 1');
  assert.match(refused('a\udc00'), 'prompt contains an unpaired UTF-16 surrogate');
  assert.match(
    refused([{ type: 'image', data: 'A'.repeat(2000), mediaType: 'image/png' }]),
    'over the limit of 1000 bytes (on the embedded log an image or file part over 65536 bytes is stored beside the log',
  );
});

test("prompt - the size is a string prompt's UTF-8 bytes, a list's JSON text", () => {
  assert.is(promptBytes('héllo'), 6);
  const parts: PromptPart[] = [{ type: 'text', text: 'héllo' }];
  assert.is(promptBytes(parts), Buffer.byteLength(JSON.stringify(parts)));
});

test('prompt - the text form: text parts as they are, JSON as its text, images and files as notes', () => {
  assert.is(
    promptText([
      { type: 'text', text: 'look:' },
      { type: 'image', url: 'https://example.com/cat.png' },
      { type: 'image', url: 'data:image/png;base64,AAAA' },
      { type: 'image', data: Buffer.from('12345').toString('base64'), mediaType: 'image/png' },
      { type: 'file', data: Buffer.from('123456').toString('base64'), mediaType: 'application/pdf', filename: 'a.pdf' },
      { type: 'json', value: { n: 1 } },
    ]),
    'look:\n[image https://example.com/cat.png]\n[image data URL]\n[image image/png, 5 bytes]\n[file a.pdf application/pdf, 6 bytes]\n{"n":1}',
  );
  assert.is(promptText('as is'), 'as is');
});

test('prompt - the same prompt is the same whatever the order of its keys; a string never equals parts', () => {
  const a: PromptPart[] = [{ type: 'json', value: { x: 1, y: [{ p: 1, q: 2 }] } }];
  const b = [{ value: { y: [{ q: 2, p: 1 }], x: 1 }, type: 'json' }] as PromptPart[];
  assert.ok(samePrompt(a, b));
  assert.not.ok(samePrompt(a, [{ type: 'json', value: { x: 2, y: [{ p: 1, q: 2 }] } }]));
  assert.not.ok(samePrompt('hi', [{ type: 'text', text: 'hi' }]));
});

test('prompt - an admission with a bad part is invalid_option, saying what is wrong', () => {
  try {
    parseAdmitRequest('ses_1', { prompt: [{ type: 'image' } as never] });
    assert.unreachable('accepted');
  } catch (err) {
    assert.ok(isSessiondError(err));
    assert.is(err.code, ErrorCode.InvalidOption);
    assert.match(err.message, 'Invalid input: prompt part 0 ("image") is not a valid part');
  }
});

test.run();
