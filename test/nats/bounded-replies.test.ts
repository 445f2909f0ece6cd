// The pieces that keep a hostile body cheap and its reply short, without a server: the depth scan
// (no recursion, strings skipped), bounded echoes, and error bodies that always fit MAX_ERROR_REPLY_BYTES.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { boundText, echo } from '../../src/errors.ts';
import { MAX_BODY_DEPTH, MAX_ERROR_REPLY_BYTES, boundErrorBody, encodeJson, tooDeepAt } from '../../src/nats/command-protocol.ts';

const bytes = (text: string) => new TextEncoder().encode(text);

test('depth scan - counts objects and arrays outside strings, finds the first byte too deep, and survives 1,000,000 levels', () => {
  assert.is(tooDeepAt(bytes('{"sessionId":"ses_1","prompt":"[[[{{{"}')), -1);
  assert.is(tooDeepAt(bytes('{"a":"\\\\"}')), -1, 'an escaped backslash ends before the closing quote');
  assert.is(tooDeepAt(bytes('{"a":"\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}')), -1, 'an escaped quote does not end the string');
  const nested = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
  assert.is(tooDeepAt(bytes(nested(MAX_BODY_DEPTH))), -1, 'exactly the limit is fine');
  assert.is(tooDeepAt(bytes(nested(MAX_BODY_DEPTH + 1))), MAX_BODY_DEPTH, 'the offset of the first bracket past the limit');
  // 17 bytes before the first nested object (ü is 2 bytes, € 3, 😀 4); the outer object is level 1
  assert.is(
    tooDeepAt(bytes(`{"p":"ü€😀",${'"a":{'.repeat(40)}${'}'.repeat(40)}}`)),
    17 + 4 + 5 * (MAX_BODY_DEPTH - 1),
    'multi-byte text never looks like a bracket',
  );
  assert.ok(tooDeepAt(bytes(nested(1_000_000))) > 0);
});

test('echo - strings cut to 200 characters with their size, never half a surrogate pair; other values as short JSON', () => {
  assert.is(echo('short'), '"short"');
  assert.is(echo('x'.repeat(1000)), `"${'x'.repeat(200)}"…(1000 bytes)`);
  const pairAtCut = `${'x'.repeat(199)}😀tail`;
  assert.is(boundText(pairAtCut), `${'x'.repeat(199)}…(${Buffer.byteLength(pairAtCut)} bytes)`, 'the pair is dropped whole');
  assert.is(echo(42), '42');
  assert.is(echo({ a: [1, 2] }), '{"a":[1,2]}');
  const cyclic: Record<string, unknown> = {};
  cyclic['self'] = cyclic;
  assert.is(echo(cyclic), 'an object');
  let deep: unknown = 1;
  for (let i = 0; i < 200_000; i++) deep = [deep];
  assert.is(echo(deep), 'an array', 'too deep to write: named, not a stack overflow');
});

test('error bodies - any message and details fit in MAX_ERROR_REPLY_BYTES, short ones pass unchanged', () => {
  const small = { code: 'invalid_id' as const, message: 'Invalid session id "a.b"', details: { role: 'session id', value: 'a.b' } };
  assert.equal(boundErrorBody(small), small);
  const control = '\u0001'.repeat(100_000); // 6 bytes each in JSON
  const details: Record<string, unknown> = { value: control, list: Array.from({ length: 1000 }, (_, i) => `item ${i}`), nested: { deep: control } };
  for (let i = 0; i < 100; i++) details[`k${i}${'k'.repeat(500)}`] = control;
  const bounded = boundErrorBody({ code: 'bad_request', message: control, details });
  assert.ok(encodeJson({ ok: false, error: bounded }).length <= MAX_ERROR_REPLY_BYTES, `${encodeJson({ ok: false, error: bounded }).length} bytes`);
  assert.match(bounded.message, '…(100000 bytes)');
});

test.run();
