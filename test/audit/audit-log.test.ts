import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { auditLog } from '../../src/audit/audit-log.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';

let seq = 0;
const ev = (type: string, time: number, payload: Record<string, unknown>, sessionId = 'ses_a') => ({ id: `evt_${seq}`, type, version: 1, sessionId, seq: ++seq, time, payload }) as SessionEvent;
const claim = (id: string, owner: string, time: number) => ev('execution.claimed', time, { executionId: id, ownerId: owner, expiresAt: time + 30_000, leaseMs: 30_000, assistantSeq: -1 });

test('audit - a clean log has no violations', () => {
  seq = 0;
  const log = [ev('input.admitted', 0, { inputId: 'i1' }), claim('e1', 'a', 0), ev('input.promoted', 1, { inputId: 'i1', executionId: 'e1' }),
    ev('execution.settled', 2, { executionId: 'e1', outcome: 'succeeded' }), claim('e2', 'b', 3), ev('execution.cancelled', 4, { executionId: 'e2' })];
  assert.equal(auditLog(log), []);
});

test('audit - finds two live owners, double promotion, overwritten cancellation, zombie writes, double recovery', () => {
  seq = 0;
  const log = [
    ev('input.admitted', 0, { inputId: 'i1' }),
    claim('e1', 'a', 0),
    claim('e2', 'b', 10),                                            // e1 still live
    ev('input.promoted', 11, { inputId: 'i1', executionId: 'e2' }),
    ev('input.promoted', 12, { inputId: 'i1', executionId: 'e2' }),  // twice
    ev('execution.cancelled', 13, { executionId: 'e2' }),
    ev('execution.settled', 14, { executionId: 'e2', outcome: 'succeeded' }), // after cancel
    ev('step.started', 40_000, { executionId: 'e1', messageId: 'm', step: 0 }), // e1 expired at 30 000
    ev('recovery.started', 40_001, { executionId: 'e1' }),
    ev('recovery.started', 40_002, { executionId: 'e1' }),
  ];
  const rules = auditLog(log).map((v) => v.rule);
  assert.equal(rules, ['two_live_owners', 'promoted_twice', 'cancellation_overwritten', 'write_after_expiry', 'recovered_twice']);
  const first = auditLog(log)[0]!;
  assert.equal(first.seqs, [2, 3]);
  assert.match(first.message, 'was live');
});

test.run();
