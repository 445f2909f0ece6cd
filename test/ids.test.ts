import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateId, isValidId, sequentialIds, randomIds, MAX_ID_LENGTH } from '../src/ids.ts';
import { ErrorCode } from '../src/errors.ts';
import { expectCode } from '../src/testing/fixtures.ts';

test('ids - accepts subject-safe ids', () => {
  for (const ok of ['ses_1', 'a', 'ses-ABC:12+x=y@z', 'x'.repeat(MAX_ID_LENGTH)]) assert.is(validateId(ok), ok);
});

test('ids - refuses dots, spaces, wildcards, control characters, empty and overlong ids, naming the problem', () => {
  const cases: [unknown, string][] = [
    ['ses.1', '"."'],
    ['ses 1', '" "'],
    ['ses*', '"*"'],
    ['ses>', '">"'],
    ['a\u0000b', 'U+0000'],
    ['a\nb', 'U+000a'],
    ['', 'empty'],
    ['x'.repeat(MAX_ID_LENGTH + 1), `${MAX_ID_LENGTH + 1} characters`],
    [42, 'got number'],
    [null, 'got null'],
  ];
  for (const [value, why] of cases) {
    const err = expectCode(() => validateId(value, 'session id'), ErrorCode.InvalidId, 'Invalid session id');
    assert.match(err.message, why);
    assert.not.ok(isValidId(value));
  }
});

test('ids - random ids sort in creation order (also many within one ms): database indexes grow at their end', () => {
  const made = Array.from({ length: 5_000 }, () => randomIds.next('evt'));
  assert.equal([...made].sort(), made, 'sorted order is creation order');
  assert.is(new Set(made).size, made.length, 'all distinct');
  for (const id of made.slice(0, 3)) assert.match(id, /^evt_[0-9a-f]{32}$/);
  const ms = parseInt(made[0]!.slice(4, 16), 16);
  assert.ok(Math.abs(ms - Date.now()) < 60_000, 'the leading digits are the creation time in ms');
});

test('ids - sources: sequential ids are deterministic, random ids are valid and distinct', () => {
  const a = sequentialIds('t');
  assert.equal([a.next('exe'), a.next('evt')], ['exe_t000001', 'evt_t000002']);
  const r1 = randomIds.next('ses');
  assert.ok(isValidId(r1));
  assert.is.not(r1, randomIds.next('ses'));
});

test.run();
