/**
 * `sessiond check`'s rules for session calls, each seen on a log built to break it: a child's end
 * delivered twice to its parent (safety), a parent still waiting on a child whose turn ended
 * longer than the grace ago (liveness: no sweep delivered it), and a child input its parent's call
 * admitted that no wait of the parent names (a recovered turn called again: the prompt ran twice).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { auditLog } from '../../src/audit/audit-log.ts';
import { auditLiveness } from '../../src/audit/liveness.ts';
import { session } from '../../src/testing/fixtures.ts';

const child = { sessionId: 'ses_child', inputId: 'inp_call_1' };

/** The parent's turn calls ses_child and waits; the child runs the input and succeeds at `endAt`. */
function logs(endAt: number) {
  const p = session('ses_parent');
  const c = session('ses_child');
  const parent = [
    p.ev('input.admitted', { inputId: 'inp_p', prompt: 'ask', delivery: 'queue', wake: true, source: 'user' }, { time: 0 }),
    p.ev('execution.claimed', { executionId: 'exe_p1', ownerId: 'own_a', expiresAt: 30_000, leaseMs: 30_000, assistantSeq: -1 }, { time: 1 }),
    p.ev('input.promoted', { inputId: 'inp_p', executionId: 'exe_p1' }, { time: 2 }),
    p.ev('wait.started', { executionId: 'exe_p1', kind: 'session', name: 'ask', child }, { time: 3 }),
    p.ev('execution.settled', { executionId: 'exe_p1', outcome: 'waiting' }, { time: 3 }),
  ];
  const childLog = [
    c.ev('input.admitted', { inputId: child.inputId, prompt: 'q', delivery: 'queue', wake: true, source: 'user', caller: 'ses_parent' }, { time: 3 }),
    c.ev('execution.claimed', { executionId: 'exe_c1', ownerId: 'own_a', expiresAt: 30_004, leaseMs: 30_000, assistantSeq: -1 }, { time: 4 }),
    c.ev('input.promoted', { inputId: child.inputId, executionId: 'exe_c1' }, { time: 5 }),
    c.ev('execution.settled', { executionId: 'exe_c1', outcome: 'succeeded' }, { time: endAt }),
  ];
  const resolve = (time: number) =>
    p.ev('wait.resolved', { executionId: 'exe_p1', kind: 'session', name: 'ask', outcome: 'delivered', actor: 'session:ses_child' }, { time });
  return { parent, childLog, resolve };
}

test('check - a child result delivered twice to its parent is a violation naming both deliveries', () => {
  const { parent, childLog, resolve } = logs(10);
  const once = [...parent, resolve(20)];
  assert.equal(
    auditLog([...once, ...childLog]).filter((v) => v.rule === 'child_delivered_twice'),
    [],
  );
  const twice = [...once, resolve(21)];
  const found = auditLog([...twice, ...childLog]).filter((v) => v.rule === 'child_delivered_twice');
  assert.is(found.length, 1);
  assert.equal(found[0]!.seqs, [6, 7]);
  assert.match(found[0]!.message, 'child input inp_call_1 was delivered 2 times');
});

test('check - a parent still waiting on a child that ended past the grace is reported; delivered or recent, it is not', () => {
  const { parent, childLog, resolve } = logs(10_000);
  const rules = (events: Parameters<typeof auditLiveness>[0], now: number) =>
    auditLiveness(events, { now, graceMs: 60_000 }).filter((v) => v.rule === 'child_end_undelivered');
  assert.equal(rules([...parent, ...childLog], 30_000), [], 'within the grace: the sweep has time');
  const late = rules([...parent, ...childLog], 100_000);
  assert.is(late.length, 1);
  assert.is(late[0]!.sessionId, 'ses_parent');
  assert.equal(late[0]!.seqs, [4]);
  assert.match(late[0]!.message, 'still waits on ses_child, whose turn ended succeeded at 1970-01-01T00:00:10.000Z');
  assert.equal(rules([...parent, resolve(10_001), ...childLog], 100_000), [], 'delivered: nothing to report');
  assert.equal(rules([...parent, ...childLog.slice(0, 3)], 100_000), [], 'the child still runs: the parent waits by design');
});

/**
 * The parent's first execution admitted `inp_call_1` into the child and died before its wait was
 * recorded; its recovered turn (the continuation) called again and waited on `inp_call_2`.
 */
function calledAgain() {
  const p = session('ses_parent');
  const c = session('ses_child');
  const again = { sessionId: 'ses_child', inputId: 'inp_call_2' };
  const continues = {
    executionId: 'exe_p1',
    reason: 'interrupted' as const,
    phase: 'unknown' as const,
    inputIds: ['inp_p'],
    assistantMessageId: null,
    retryTools: [],
  };
  const parent = [
    p.ev('input.admitted', { inputId: 'inp_p', prompt: 'ask', delivery: 'queue', wake: true, source: 'user' }, { time: 0 }),
    p.ev('execution.claimed', { executionId: 'exe_p1', ownerId: 'own_a', expiresAt: 30_000, leaseMs: 30_000, assistantSeq: -1 }, { time: 1 }),
    p.ev('input.promoted', { inputId: 'inp_p', executionId: 'exe_p1' }, { time: 2 }),
    p.ev('recovery.started', { executionId: 'exe_p1' }, { time: 31_000 }),
    p.ev('input.admitted', { inputId: 'inp_cont', prompt: 'go on', delivery: 'queue', wake: true, source: 'recovery', continues }, { time: 31_000 }),
    p.ev('execution.claimed', { executionId: 'exe_p2', ownerId: 'own_b', expiresAt: 61_000, leaseMs: 30_000, assistantSeq: -1 }, { time: 31_001 }),
    p.ev('input.promoted', { inputId: 'inp_cont', executionId: 'exe_p2' }, { time: 31_002 }),
    p.ev('wait.started', { executionId: 'exe_p2', kind: 'session', name: 'ask-again', child: again }, { time: 31_003 }),
    p.ev('execution.settled', { executionId: 'exe_p2', outcome: 'waiting' }, { time: 31_003 }),
  ];
  const admit = (inputId: string, time: number) =>
    c.ev('input.admitted', { inputId, prompt: 'q', delivery: 'queue', wake: true, source: 'user', caller: 'ses_parent' }, { time });
  return { p, parent, child: [admit('inp_call_1', 3), admit('inp_call_2', 31_003)] };
}

test('check - a child input its parent admitted and never waited on (the recovered turn called again) is reported on the child', () => {
  const { parent, child } = calledAgain();
  const rules = (events: Parameters<typeof auditLiveness>[0], now: number) =>
    auditLiveness(events, { now, graceMs: 60_000 }).filter((v) => v.rule === 'child_call_unawaited');
  const found = rules([...parent, ...child], 200_000);
  assert.is(found.length, 1);
  assert.is(found[0]!.sessionId, 'ses_child');
  assert.equal(found[0]!.seqs, [1]);
  assert.match(
    found[0]!.message,
    'input inp_call_1, admitted at seq 1 (1970-01-01T00:00:00.003Z) by a session call of ses_parent, is named by no wait of ses_parent',
  );
  assert.equal(rules([...parent, ...child], 50_000), [], 'within the grace: the turn may yet record its wait');
  assert.equal(rules([...child], 200_000), [], 'a parent deleted since: nothing to judge');
});

test('check - a child input admitted by a turn cancelled before its wait was recorded is not reported', () => {
  const { p, parent, child } = calledAgain();
  const cancelled = [...parent.slice(0, 3), p.ev('execution.cancelled', { executionId: 'exe_p1', reason: 'stop' }, { time: 4 })];
  assert.equal(
    auditLiveness([...cancelled, child[0]!], { now: 200_000, graceMs: 60_000 }).filter((v) => v.rule === 'child_call_unawaited'),
    [],
  );
});

test.run();
