import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lateWrites } from '../../src/audit/late-writes.ts';
import { auditLog } from '../../src/audit/audit-log.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';

let seq = 0;
const ev = (type: string, time: number, committedAt: number | undefined, payload: Record<string, unknown>) =>
  ({ id: `evt_${seq}`, type, version: 1, sessionId: 'ses_a', seq: ++seq, time, payload, ...(committedAt === undefined ? {} : { committedAt }) }) as SessionEvent;
const claim = (id: string, time: number, leaseMs = 1000) => ev('execution.claimed', time, time, { executionId: id, ownerId: 'own_a', expiresAt: time + leaseMs, leaseMs, assistantSeq: -1 });

test('late writes - a renewal and a settle committed after the lease they were decided under: warnings with their lag, no violation', () => {
  seq = 0;
  const log = [
    claim('e1', 0),                                                                        // lease to 1000
    ev('step.started', 100, 150, { executionId: 'e1', messageId: 'm', step: 0 }),           // on time
    ev('execution.renewed', 900, 1700, { executionId: 'e1', expiresAt: 1900 }),             // decided live, landed 700 ms late
    ev('execution.settled', 1800, 2000, { executionId: 'e1', outcome: 'succeeded' }),       // lease now 1900: 100 ms late
    ev('step.ended', 1850, 5000, { executionId: 'e1', messageId: 'm', finish: 'stop' }),    // after the settle: the audit's business
  ];
  const late = lateWrites(log);
  assert.equal(late.map((w) => [w.seq, w.type, w.lagMs]), [[3, 'execution.renewed', 700], [4, 'execution.settled', 100]]);
  assert.match(late[0]!.message, 'execution.renewed of execution e1 was decided at 1970-01-01T00:00:00.900Z, while its lease was live, but committed at 1970-01-01T00:00:01.700Z, 700 ms after the lease expired at 1970-01-01T00:00:01.000Z');
  assert.equal(auditLog(log.slice(0, 4)), [], 'fencing decided: not a violation');
});

test('late writes - events without a commit time, writes decided after expiry and other executions are not judged', () => {
  seq = 0;
  const log = [
    claim('e1', 0),
    ev('execution.renewed', 500, undefined, { executionId: 'e1', expiresAt: 1500 }),       // stored before commit times
    ev('step.started', 2000, 2100, { executionId: 'e1', messageId: 'm', step: 0 }),         // decided after expiry: a violation, not a warning
    ev('input.admitted', 100, 9000, { inputId: 'i1' }),                                     // not lease-bound
  ];
  assert.equal(lateWrites(log), []);
  assert.equal(auditLog(log).map((v) => v.rule), ['write_after_expiry']);
});

test.run();
