import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { auditLiveness } from '../../src/audit/liveness.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { session } from '../../src/testing/fixtures.ts';

let a = session('ses_a');
const admit = (id: string, time: number, wake = true) =>
  a.ev('input.admitted', { inputId: id, prompt: 'p', delivery: 'queue', wake, source: 'user' }, { time });
const claim = (id: string, time: number) =>
  a.ev('execution.claimed', { executionId: id, ownerId: 'own_a', expiresAt: time + 30_000, leaseMs: 30_000, assistantSeq: -1 }, { time });
const promote = (input: string, exe: string, time: number) => a.ev('input.promoted', { inputId: input, executionId: exe }, { time });
const settle = (exe: string, time: number) => a.ev('execution.settled', { executionId: exe, outcome: 'succeeded' }, { time });
const rules = (log: SessionEvent[], now: number, graceMs = 60_000) => auditLiveness(log, { now, graceMs }).map((v) => v.rule);

test('liveness audit - a queued prompt left behind a settled turn is stranded once the grace has passed', () => {
  a = session('ses_a');
  const log = [admit('i1', 0), admit('i2', 0), claim('e1', 1), promote('i1', 'e1', 2), settle('e1', 1_000)];
  assert.equal(rules(log, 30_000), [], 'within the grace: not yet late');
  const late = auditLiveness(log, { now: 120_000, graceMs: 60_000 });
  assert.equal(
    late.map((v) => v.rule),
    ['stranded_input'],
  );
  assert.equal(late[0]!.seqs, [2]);
  assert.match(late[0]!.message, 'input i2 (admitted at seq 2, 1970-01-01T00:00:00.000Z) asked for a wake and was never run');
  assert.match(late[0]!.message, 'since 1970-01-01T00:00:01.000Z');
});

test('liveness audit - inputs without a wake, promoted inputs, and inputs behind a live execution are not stranded', () => {
  a = session('ses_a');
  assert.equal(rules([admit('i1', 0, false)], 999_999), [], 'wake: false waits for a wake by design');
  a = session('ses_a');
  assert.equal(rules([admit('i1', 0), claim('e1', 1), promote('i1', 'e1', 2), settle('e1', 3)], 999_999), []);
  a = session('ses_a');
  assert.equal(rules([admit('i1', 0), claim('e1', 100_000), promote('i1', 'e1', 100_001), admit('i2', 100_002)], 120_000), [], 'a live turn holds the queue');
});

test('liveness audit - an expired execution never recovered, a recovery never completed, a parked wake', () => {
  a = session('ses_a');
  const unrecovered = auditLiveness([admit('i1', 0), claim('e1', 1)], { now: 200_000, graceMs: 60_000 });
  assert.equal(
    unrecovered.map((v) => v.rule),
    ['unrecovered_execution'],
  );
  assert.match(unrecovered[0]!.message, 'its lease expired at 1970-01-01T00:00:30.001Z');
  a = session('ses_a');
  assert.equal(rules([admit('i1', 0), claim('e1', 1), a.ev('recovery.started', { executionId: 'e1' }, { time: 40_000 })], 50_000, 0), [
    'recovery_incomplete',
    'stranded_input',
  ]);
  a = session('ses_a');
  const parked = [
    admit('i1', 0),
    claim('e1', 1),
    a.ev('recovery.started', { executionId: 'e1' }, { time: 40_000 }),
    admit('inp_cont', 40_000),
    a.ev('recovery.completed', { executionId: 'e1', assistantMessageId: null, continuationInputId: 'inp_cont', phase: 'safe' }, { time: 40_000 }),
    a.ev('recovery.wake_failed', { executionId: 'e1', attempt: 5, error: { type: 'x', message: 'x' }, parked: true }, { time: 41_000 }),
  ];
  assert.equal(rules(parked, 200_000).sort(), ['stranded_input', 'stranded_input', 'wake_parked']);
});

test('liveness audit - an overdue timer is late; a turn waiting for a person is not, nor are the prompts it holds; a scheduled prompt is late only from its time', () => {
  a = session('ses_a');
  const wait = (kind: 'timer' | 'approval', name: string, time: number, until?: number) =>
    a.ev('wait.started', { executionId: 'e1', kind, name, ...(until === undefined ? {} : { until }) }, { time });
  const log = [
    admit('i1', 0),
    claim('e1', 1),
    promote('i1', 'e1', 2),
    wait('approval', 'c1', 3),
    wait('timer', 'sleep-1', 3, 10_000),
    a.ev('execution.settled', { executionId: 'e1', outcome: 'waiting' }, { time: 4 }),
    admit('i2', 5), // held by the waiting turn
  ];
  assert.equal(rules(log, 69_999), [], 'the timer is within the grace');
  const late = auditLiveness(log, { now: 80_000, graceMs: 60_000 });
  assert.equal(
    late.map((v) => v.rule),
    ['overdue_wait'],
  );
  assert.match(late[0]!.message, 'the timer sleep-1 of execution e1 was due at 1970-01-01T00:00:10.000Z, 70 s before');
  const ended = [...log, a.ev('wait.resolved', { executionId: 'e1', kind: 'timer', name: 'sleep-1', outcome: 'elapsed' }, { time: 10_000 })];
  assert.equal(rules(ended, 1_000_000), [], 'waiting for a person is not late, however long');

  a = session('ses_a');
  const scheduled = [a.ev('input.admitted', { inputId: 'i1', prompt: 'p', delivery: 'queue', wake: true, source: 'user', notBefore: 100_000 }, { time: 0 })];
  assert.equal(rules(scheduled, 150_000), [], 'not late before its time + grace');
  assert.equal(rules(scheduled, 160_001), ['stranded_input']);
});

test.run();
