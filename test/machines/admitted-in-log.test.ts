/**
 * The machine's own guard against a forged snapshot (issue "Hostile input must not stop a session or
 * a worker", attack 3): an input a stored snapshot claims pending, not yet found in the log by the
 * command handler (`unverified`), is never promoted and never makes a turn claimable. A snapshot's
 * context is data anyone with the store's password can write; only a fold of the log's own
 * `input.admitted` yields an input the machine runs.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decide, type SessionSnapshot } from '../../src/machines/decider.ts';
import type { Command, ProtoEvent } from '../../src/machines/commands.ts';
import type { PendingInput } from '../../src/machines/session-context.ts';
import { ev } from '../../src/testing/fixtures.ts';
import { deciderSpec } from '../support/decider-spec.ts';

const LEASE = 30_000;
const spec = deciderSpec('ses_forged');
const claim: Command = { type: 'claim', now: 1, ownerId: 'own_a', executionId: 'exe_1', leaseMs: LEASE };
const promote = (inputId: string): Command => ({
  type: 'record',
  now: 2,
  ownerId: 'own_a',
  executionId: 'exe_1',
  events: [{ type: 'input.promoted', payload: { inputId, executionId: 'exe_1' } } as ProtoEvent],
});
/** What a forger adds to a snapshot: a pending input no `input.admitted` in the log stands for. */
const evil: PendingInput = { inputId: 'inp_evil', delivery: 'queue', seq: 1, wake: true, source: 'user', prompt: 'exfiltrate', unverified: true };
const withPending = (s: SessionSnapshot, ...pending: PendingInput[]): SessionSnapshot => ({
  ...s,
  context: { ...s.context, pending: [...s.context.pending, ...pending] },
});

test('admitted in log - an input a snapshot only claims pending is not promoted, even in a running execution', () => {
  const running = spec.given([
    ev('input.admitted', { inputId: 'inp_real' }),
    ev('execution.claimed', { executionId: 'exe_1', ownerId: 'own_a', expiresAt: LEASE, leaseMs: LEASE, assistantSeq: -1 }),
    ev('execution.started'),
  ]);
  const forged = withPending(running.snapshot, evil);
  const refused = decide(forged, promote('inp_evil'));
  assert.is(refused.ok, false);
  assert.is(!refused.ok && refused.reason, 'not_pending');
  // the same input folded from the log's admission is promoted
  const admitted = decide(running.snapshot, promote('inp_real'));
  assert.ok(admitted.ok, 'an input the log admitted is promoted');
  // and a promotion that names both is refused as a whole
  assert.is(
    decide(withPending(running.snapshot, evil), {
      ...promote('inp_real'),
      events: [...(promote('inp_real') as { events: ProtoEvent[] }).events, ...(promote('inp_evil') as { events: ProtoEvent[] }).events],
    } as Command).ok,
    false,
  );
});

test('admitted in log - a session whose only pending input is claimed by a snapshot has nothing to claim a turn for', () => {
  const idle = spec.given([]);
  const forged = withPending(idle.snapshot, evil);
  const refused = decide(forged, claim);
  assert.is(!refused.ok && refused.reason, 'nothing_pending');
  // with an input the log admitted beside it, the claim goes through
  assert.ok(decide(withPending(spec.given([ev('input.admitted', { inputId: 'inp_real' })]).snapshot, evil), claim).ok);
});

test('admitted in log - the fold of input.admitted records the admission (id and position) a stored snapshot is checked against', () => {
  const s = spec.given([ev('input.admitted', { inputId: 'inp_real' })]);
  const pending = s.snapshot.context.pending[0]!;
  assert.is(pending.admittedBy?.id, s.events[0]!.id);
  assert.is(pending.unverified, undefined);
  assert.equal(s.snapshot.context.head, { id: s.events[0]!.id, position: s.events[0]!.position ?? null });
});

test.run();
