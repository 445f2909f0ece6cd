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

test.run();
