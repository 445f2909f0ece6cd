/**
 * The session machine, pure: decisions from state + command + now, no I/O, as given / when / then
 * specs over the real decider (test/support/decider-spec.ts). The named seed invariants are tested
 * end to end through the execution service in test/execution/leases.test.ts; here each guard is
 * exercised directly, and test/machines/session-model.test.ts walks every reachable state and
 * transition (@xstate/graph), not only hand-picked paths.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hydrate, stateOf } from '../../src/machines/decider.ts';
import type { Command, ProtoEvent } from '../../src/machines/commands.ts';
import { ev } from '../../src/testing/fixtures.ts';
import { deciderSpec } from '../support/decider-spec.ts';

const LEASE = 30_000;
const spec = deciderSpec('ses_m');
const admit = (now: number, inputId = 'inp_1'): Command => ({ type: 'admit', now, inputId, prompt: 'p', delivery: 'queue', wake: true });
const claim = (now: number, ownerId: string, executionId: string): Command => ({ type: 'claim', now, ownerId, executionId, leaseMs: LEASE });
const renew = (now: number, ownerId = 'own_a'): Command => ({ type: 'renew', now, ownerId, executionId: 'exe_1' });
const record = (now: number, ...events: ProtoEvent[]): Command => ({ type: 'record', now, ownerId: 'own_a', executionId: 'exe_1', events });

/** What a claim of exe_1 by `ownerId` at `now` commits. */
const claimed = (ownerId = 'own_a', now = 0) =>
  ev('execution.claimed', { executionId: 'exe_1', ownerId, expiresAt: now + LEASE, leaseMs: LEASE, assistantSeq: -1 });
/** One input (inp_1), claimed by own_a at 0: the lease runs to 30 000. */
const claimedSession = () => spec.given([ev('input.admitted'), claimed()]);
/** The same, started. */
const running = () => spec.given([ev('input.admitted'), claimed(), ev('execution.started')]);

test('machine - a claim moves idle -> claimed with expiresAt = now + lease', () => {
  const { snapshot: s } = spec
    .given([ev('input.admitted')])
    .when(claim(1_000, 'own_a', 'exe_1'))
    .then([claimed('own_a', 1_000)]);
  assert.is(stateOf(s), 'claimed');
  assert.is(s.context.execution!.expiresAt, 31_000);
  assert.is(s.context.execution!.ownerId, 'own_a');
});

test('machine - refuses a claim while the lease is live, for another owner and for the same owner', () => {
  const s = claimedSession();
  s.when(claim(29_999, 'own_b', 'exe_2')).thenRefused('lease_live');
  s.when(claim(10, 'own_a', 'exe_3')).thenRefused('own_lease_live');
});

test('machine - an expired, unrecovered lease is not overwritten: the claim waits for recovery', () => {
  const s = claimedSession();
  s.when(claim(30_000, 'own_b', 'exe_2')).thenRefused('lease_expired');
  const recovered = s.when({ type: 'recover', now: 30_000, continuationInputId: 'inp_cont' }).then((events) =>
    assert.equal(
      events.map((e) => e.type),
      ['recovery.started', 'input.admitted', 'recovery.completed'],
    ),
  );
  assert.is(stateOf(recovered.snapshot), 'idle');
  assert.equal(
    recovered.snapshot.context.pending.map((p) => p.inputId),
    ['inp_1', 'inp_cont'],
  );
  const next = recovered.when(claim(30_001, 'own_b', 'exe_2')).thenAccepted().snapshot;
  assert.is(next.context.execution!.id, 'exe_2');
  assert.is(next.context.executions, 2);
});

test('machine - renew only while the claim is live and held; after expiry it is claim_lost', () => {
  const s = claimedSession()
    .when(renew(10_000))
    .then([ev('execution.renewed', { executionId: 'exe_1', expiresAt: 40_000 })]);
  assert.is(s.snapshot.context.execution!.expiresAt, 40_000);
  s.when(renew(40_000)).thenRefused('claim_lost', 'Session execution claim lost: exe_1');
  s.when(renew(1, 'own_b')).thenRefused();
});

test('machine - settlement after cancellation changes nothing', () => {
  const s = running()
    .when({ type: 'cancel', now: 2 })
    .then([ev('execution.cancelled', { executionId: 'exe_1' })]);
  assert.is(stateOf(s.snapshot), 'settled');
  for (const outcome of ['succeeded', 'failed'] as const) {
    s.when({ type: 'settle', now: 3, ownerId: 'own_a', executionId: 'exe_1', outcome }).thenRefused('cancelled');
  }
  s.when(record(3, ev('step.started', { executionId: 'exe_1', messageId: 'm', step: 0 }))).thenRefused('cancelled');
  assert.is(s.snapshot.context.execution!.outcome, 'cancelled');
});

test('machine - a claim snapshots the latest assistant sequence (-1 when none)', () => {
  const first = spec
    .given([ev('input.admitted')])
    .when(claim(0, 'own_a', 'exe_1'))
    .then([claimed()]);
  assert.is(first.snapshot.context.execution!.assistantSeq, -1);
  const s = spec.given([
    ev('input.admitted'),
    claimed(),
    ev('execution.started'),
    ev('step.started', { executionId: 'exe_1', messageId: 'm1', step: 0 }),
    ev('execution.settled', { executionId: 'exe_1', outcome: 'succeeded' }),
    ev('input.admitted', { inputId: 'inp_2' }),
  ]);
  const stepSeq = s.events.find((e) => e.type === 'step.started')!.seq;
  const next = s
    .when(claim(4, 'own_b', 'exe_2'))
    .then([ev('execution.claimed', { executionId: 'exe_2', ownerId: 'own_b', expiresAt: 4 + LEASE, leaseMs: LEASE, assistantSeq: stepSeq })]);
  assert.is(next.snapshot.context.execution!.assistantSeq, stepSeq);
});

test('machine - promotion is once: promoting an input that is not pending is refused loudly', () => {
  const promoted = ev('input.promoted', { inputId: 'inp_x', executionId: 'exe_1' });
  const s = spec
    .given([ev('input.admitted', { inputId: 'inp_x' }), claimed(), ev('execution.started')])
    .when(record(2, promoted))
    .then([promoted]);
  s.when(record(2, promoted)).thenRefused('not_pending', 'invariant violated');
  s.when(admit(3, 'inp_x')).thenRefused('already_admitted'); // the same input id is not admitted twice
});

test('never admits an input twice: a recovery or a hand-back whose continuation id is already admitted is refused, not admitted again', () => {
  // inp_1 is admitted (and pending); a recovery or hand-back naming it as its continuation was decided before
  const s = running();
  s.when({ type: 'recover', now: 30_000, continuationInputId: 'inp_1' }).thenRefused(
    'already_admitted',
    'the continuation inp_1 of this recovery was already admitted: an input is admitted once',
  );
  s.when({ type: 'settle', now: 1, ownerId: 'own_a', executionId: 'exe_1', outcome: 'released', continuationInputId: 'inp_1' }).thenRefused(
    'already_admitted',
    'the continuation inp_1 of this hand-back was already admitted',
  );
  // a new id goes through, and a settlement that admits nothing is not checked
  s.when({ type: 'recover', now: 30_000, continuationInputId: 'inp_cont_exe_1' }).thenAccepted();
  s.when({ type: 'settle', now: 1, ownerId: 'own_a', executionId: 'exe_1', outcome: 'succeeded', continuationInputId: 'inp_1' }).thenAccepted();
});

test('machine - runners may not write engine events; recovery may not touch a live lease', () => {
  const s = running();
  s.when(record(2, ev('execution.claimed', { executionId: 'exe_9', ownerId: 'own_z', expiresAt: 1e12, leaseMs: 1, assistantSeq: -1 }))).thenRefused(
    'not_runner_event',
  );
  s.when({ type: 'recover', now: 29_999, continuationInputId: 'inp_c' }).thenRefused('lease_not_expired');
});

test('machine - the same events replayed give the same state', () => {
  const s = deciderSpec('ses_r')
    .given()
    .when(admit(0))
    .thenAccepted()
    .when(claim(0, 'own_a', 'exe_1'))
    .thenAccepted()
    .when({ type: 'start', now: 1, ownerId: 'own_a', executionId: 'exe_1' })
    .thenAccepted()
    .when(renew(5))
    .thenAccepted()
    .when({ type: 'cancel', now: 6 })
    .thenAccepted();
  const replayed = hydrate('ses_r', s.events);
  assert.is(stateOf(replayed), stateOf(s.snapshot));
  assert.equal(replayed.context, s.snapshot.context);
  assert.throws(() => hydrate('ses_r', [s.events[0]!, s.events[2]!]), /expected 2/, 'a gap in the sequence is refused');
});

test('machine - refusals give times as ISO dates, not raw epoch milliseconds', () => {
  const now = Date.UTC(2026, 10, 30, 12, 0, 0);
  const s = spec.given([ev('input.admitted'), claimed('own_a', now)]);
  const live = s.when(claim(now + 1000, 'own_b', 'exe_2')).thenRefused('lease_live', 'until 2026-11-30T12:00:30.000Z');
  assert.not.match(live, String(now + LEASE));
  s.when(claim(now + LEASE + 1, 'own_b', 'exe_2')).thenRefused('lease_expired', 'expired at 2026-11-30T12:00:30.000Z');
});

test.run();
