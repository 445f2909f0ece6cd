import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lateWrites } from '../../src/audit/late-writes.ts';
import { auditLog } from '../../src/audit/audit-log.ts';
import { session } from '../../src/testing/fixtures.ts';

let a = session('ses_a');
const claim = (id: string, time: number, leaseMs = 1000) =>
  a.ev('execution.claimed', { executionId: id, ownerId: 'own_a', expiresAt: time + leaseMs, leaseMs, assistantSeq: -1 }, { time, committedAt: time });

test('late writes - a renewal and a settle committed after the lease they were decided under: warnings with their lag, no violation', () => {
  a = session('ses_a');
  const log = [
    claim('e1', 0), // lease to 1000
    a.ev('step.started', { executionId: 'e1', messageId: 'm', step: 0 }, { time: 100, committedAt: 150 }), // on time
    a.ev('execution.renewed', { executionId: 'e1', expiresAt: 1900 }, { time: 900, committedAt: 1700 }), // decided live, landed 700 ms late
    a.ev('execution.settled', { executionId: 'e1', outcome: 'succeeded' }, { time: 1800, committedAt: 2000 }), // lease now 1900: 100 ms late
    a.ev('step.ended', { executionId: 'e1', messageId: 'm', finish: 'stop' }, { time: 1850, committedAt: 5000 }), // after the settle: the audit's business
  ];
  const late = lateWrites(log);
  assert.equal(
    late.map((w) => [w.seq, w.type, w.lagMs]),
    [
      [3, 'execution.renewed', 700],
      [4, 'execution.settled', 100],
    ],
  );
  assert.match(
    late[0]!.message,
    'execution.renewed of execution e1 was decided at 1970-01-01T00:00:00.900Z, while its lease was live, but committed at 1970-01-01T00:00:01.700Z, 700 ms after the lease expired at 1970-01-01T00:00:01.000Z',
  );
  assert.equal(auditLog(log.slice(0, 4)), [], 'fencing decided: not a violation');
});

test('late writes - events without a commit time, writes decided after expiry and other executions are not judged', () => {
  a = session('ses_a');
  const log = [
    claim('e1', 0),
    a.ev('execution.renewed', { executionId: 'e1', expiresAt: 1500 }, { time: 500 }), // stored before commit times
    a.ev('step.started', { executionId: 'e1', messageId: 'm', step: 0 }, { time: 2000, committedAt: 2100 }), // decided after expiry: a violation, not a warning
    a.ev('input.admitted', { inputId: 'i1' }, { time: 100, committedAt: 9000 }), // not lease-bound
  ];
  assert.equal(lateWrites(log), []);
  assert.equal(
    auditLog(log).map((v) => v.rule),
    ['write_after_expiry'],
  );
});

test.run();
