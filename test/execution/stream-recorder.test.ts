/**
 * The stream recorder's bookkeeping (pure): what streamed since the last record, per part, taken
 * as `text.streamed` records within a byte budget (what stays is taken next, never splitting a
 * surrogate pair), dropped when the part completes or its step ends.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { StreamRecorder } from '../../src/execution/stream-recorder.ts';

const texts = (r: StreamRecorder, budget?: number) =>
  r.take(budget).map((e) => {
    const p = e.payload as { partId: string; text: string; restart: boolean };
    return [p.partId, p.text, p.restart];
  });

test('stream recorder - says when the first unrecorded text arrives (arm a timer once), records each part once per take', () => {
  const r = new StreamRecorder('exe_1');
  assert.is(r.streamed('msg_1', 'prt_a', 'Once '), true);
  assert.is(r.streamed('msg_1', 'prt_a', 'upon'), false);
  assert.is(r.streamed('msg_1', 'prt_b', 'other'), false, 'already dirty: the armed timer covers it');
  assert.equal(texts(r), [
    ['prt_a', 'Once upon', true],
    ['prt_b', 'other', true],
  ]);
  assert.is(r.dirty, false);
  assert.equal(texts(r), []);
  assert.is(r.streamed('msg_1', 'prt_a', ' a time'), true);
  r.completed('prt_a');
  assert.is(r.dirty, false, 'the final text replaces it');
  assert.is(r.streamed('msg_2', 'prt_c', 'x'), true);
  r.ended('msg_2');
  assert.equal(texts(r), [], 'an ended step records nothing more');
});

test('stream recorder - a budget splits a long text over records, never inside a surrogate pair', () => {
  const r = new StreamRecorder('exe_1');
  r.streamed('msg_1', 'prt_a', `ab${'😀'}cd`); // a b \ud83d \ude00 c d
  assert.equal(texts(r, 9), [['prt_a', 'ab', true]], '3 units fit, but the third is half a pair');
  assert.is(r.dirty, true);
  assert.equal(texts(r, 9), [['prt_a', '😀c', false]]);
  assert.equal(texts(r, 9), [['prt_a', 'd', false]]);
  assert.is(r.dirty, false);
});

test('stream recorder - a restart records an empty restart only for a part that has text recorded', () => {
  const r = new StreamRecorder('exe_1');
  r.streamed('msg_1', 'prt_a', 'abc');
  assert.is(r.restart('msg_1'), false, 'nothing recorded yet: only the pending text goes');
  assert.is(r.dirty, false);
  r.streamed('msg_1', 'prt_a', 'xyz');
  assert.equal(texts(r), [['prt_a', 'xyz', true]]);
  assert.is(r.restart('msg_1'), true);
  assert.equal(texts(r), [['prt_a', '', true]]);
});

test.run();
