import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { auditLog } from '../../src/audit/audit-log.ts';
import { session } from '../../src/testing/fixtures.ts';

let a = session('ses_a');
const claim = (id: string, owner: string, time: number) =>
  a.ev('execution.claimed', { executionId: id, ownerId: owner, expiresAt: time + 30_000, leaseMs: 30_000, assistantSeq: -1 }, { time });

test('audit - a clean log has no violations', () => {
  a = session('ses_a');
  const log = [
    a.ev('input.admitted', { inputId: 'i1' }, { time: 0 }),
    claim('e1', 'a', 0),
    a.ev('input.promoted', { inputId: 'i1', executionId: 'e1' }, { time: 1 }),
    a.ev('execution.settled', { executionId: 'e1', outcome: 'succeeded' }, { time: 2 }),
    claim('e2', 'b', 3),
    a.ev('execution.cancelled', { executionId: 'e2' }, { time: 4 }),
  ];
  assert.equal(auditLog(log), []);
});

test('audit - finds two live owners, double promotion, overwritten cancellation, zombie writes, double recovery', () => {
  a = session('ses_a');
  const log = [
    a.ev('input.admitted', { inputId: 'i1' }, { time: 0 }),
    claim('e1', 'a', 0),
    claim('e2', 'b', 10), // e1 still live
    a.ev('input.promoted', { inputId: 'i1', executionId: 'e2' }, { time: 11 }),
    a.ev('input.promoted', { inputId: 'i1', executionId: 'e2' }, { time: 12 }), // twice
    a.ev('execution.cancelled', { executionId: 'e2' }, { time: 13 }),
    a.ev('execution.settled', { executionId: 'e2', outcome: 'succeeded' }, { time: 14 }), // after cancel
    a.ev('step.started', { executionId: 'e1', messageId: 'm', step: 0 }, { time: 40_000 }), // e1 expired at 30 000
    a.ev('recovery.started', { executionId: 'e1' }, { time: 40_001 }),
    a.ev('recovery.started', { executionId: 'e1' }, { time: 40_002 }),
  ];
  const rules = auditLog(log).map((v) => v.rule);
  assert.equal(rules, ['two_live_owners', 'promoted_twice', 'cancellation_overwritten', 'write_after_expiry', 'recovered_twice']);
  const first = auditLog(log)[0]!;
  assert.equal(first.seqs, [2, 3]);
  assert.match(first.message, 'was live');
});

test('audit - waits: a call started unapproved or twice, a timer ended before its time, a scheduled prompt promoted early', () => {
  a = session('ses_a');
  const call = (callId: string) => ({
    executionId: 'e1',
    messageId: 'm',
    callId,
    name: 'send',
    input: {},
    durable: true,
    idempotencyKey: `k_${callId}`,
    started: false,
  });
  const ask = (callId: string) => ({ executionId: 'e1', kind: 'approval' as const, name: callId, messageId: 'm', callId, tool: 'send' });
  const log = [
    a.ev('input.admitted', { inputId: 'i1', notBefore: 5 }, { time: 0 }),
    claim('e1', 'a', 1),
    a.ev('input.promoted', { inputId: 'i1', executionId: 'e1' }, { time: 2 }), // before 5
    a.ev('step.started', { executionId: 'e1', messageId: 'm', step: 0 }, { time: 6 }),
    a.ev('tool.called', call('c_ok'), { time: 6 }),
    a.ev('wait.started', ask('c_ok'), { time: 6 }),
    a.ev('tool.called', call('c_denied'), { time: 6 }),
    a.ev('wait.started', ask('c_denied'), { time: 6 }),
    a.ev('wait.started', { executionId: 'e1', kind: 'timer', name: 'sleep-1', until: 1_000 }, { time: 7 }),
    a.ev('execution.settled', { executionId: 'e1', outcome: 'waiting' }, { time: 8 }),
    a.ev('wait.resolved', { executionId: 'e1', kind: 'approval', name: 'c_ok', outcome: 'approved' }, { time: 9 }),
    a.ev('wait.resolved', { executionId: 'e1', kind: 'approval', name: 'c_denied', outcome: 'denied' }, { time: 10 }),
    a.ev('wait.resolved', { executionId: 'e1', kind: 'timer', name: 'sleep-1', outcome: 'elapsed' }, { time: 999 }), // early
    claim('e2', 'b', 1_000),
    a.ev('tool.started', { executionId: 'e2', messageId: 'm', callId: 'c_ok' }, { time: 1_001 }),
    a.ev('tool.started', { executionId: 'e2', messageId: 'm', callId: 'c_ok' }, { time: 1_002 }), // twice
    a.ev('tool.started', { executionId: 'e2', messageId: 'm', callId: 'c_denied' }, { time: 1_003 }), // denied
  ];
  assert.equal(
    auditLog(log).map((v) => v.rule),
    ['promoted_early', 'woken_early', 'approved_call_started_twice', 'unapproved_call_started'],
  );
  assert.match(auditLog(log)[3]!.message, 'call c_denied started at seq 17 though a person decided denied');
  // the same log without the faults is clean
  const clean = log.filter((_, i) => ![2, 12, 15, 16].includes(i));
  assert.equal(auditLog(clean.map((e, i) => ({ ...e, seq: i + 1 }))), []);
});

test.run();
