/**
 * The session machine, pure: decisions from state + command + now, no I/O. The named seed
 * invariants are tested end to end through the execution service in test/execution/leases.test.ts;
 * here each guard is exercised directly, and a model-based walk (@xstate/graph) checks the
 * invariants on every reachable state and transition, not only on hand-picked paths.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fromTransition } from 'xstate';
import { getShortestPaths } from '@xstate/graph';
import { decide, evolve, hydrate, initialSnapshot, stateOf, type SessionSnapshot } from '../../src/machines/decider.ts';
import { sessionMachine } from '../../src/machines/session-machine.ts';
import type { Command, ProtoEvent } from '../../src/machines/commands.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { leaseLive } from '../../src/machines/session-context.ts';

const LEASE = 30_000;
let n = 0;
/** Folds decided events as if the log committed them. */
function commit(snap: SessionSnapshot, events: ProtoEvent[], now: number, machine = sessionMachine): SessionSnapshot {
  for (const p of events) {
    const e = { id: `evt_${++n}`, type: p.type, version: 1, sessionId: snap.context.sessionId, seq: snap.context.seq + 1, time: now, payload: p.payload } as SessionEvent;
    snap = evolve(snap, e, machine);
  }
  return snap;
}
function run(snap: SessionSnapshot, command: Command, machine = sessionMachine): SessionSnapshot {
  const d = decide(snap, command, machine);
  if (!d.ok) throw new Error(`refused: ${d.reason}: ${d.message}`);
  return commit(snap, d.events, command.now, machine);
}
const admit = (now: number, id = `inp_${++n}`): Command => ({ type: 'admit', now, inputId: id, prompt: 'p', delivery: 'queue', wake: true });
const claim = (now: number, ownerId: string, executionId: string): Command => ({ type: 'claim', now, ownerId, executionId, leaseMs: LEASE });

function claimedBy(owner = 'own_a', now = 0) {
  let s = initialSnapshot('ses_m');
  s = run(s, admit(now));
  s = run(s, claim(now, owner, 'exe_1'));
  return s;
}

test('machine - a claim moves idle -> claimed with expiresAt = now + lease', () => {
  const s = claimedBy('own_a', 1_000);
  assert.is(stateOf(s), 'claimed');
  assert.is(s.context.execution!.expiresAt, 31_000);
  assert.is(s.context.execution!.ownerId, 'own_a');
});

test('machine - refuses a claim while the lease is live, for another owner and for the same owner', () => {
  const s = claimedBy();
  const other = decide(s, claim(29_999, 'own_b', 'exe_2'));
  assert.equal([other.ok, !other.ok && other.reason], [false, 'lease_live']);
  const same = decide(s, claim(10, 'own_a', 'exe_3'));
  assert.equal([same.ok, !same.ok && same.reason], [false, 'own_lease_live']);
});

test('machine - an expired, unrecovered lease is not overwritten: the claim waits for recovery', () => {
  const s = claimedBy();
  const d = decide(s, claim(30_000, 'own_b', 'exe_2'));
  assert.equal([d.ok, !d.ok && d.reason], [false, 'lease_expired']);
  const recovered = run(s, { type: 'recover', now: 30_000, continuationInputId: 'inp_cont' });
  assert.is(stateOf(recovered), 'idle');
  assert.equal(recovered.context.pending.map((p) => p.inputId), [recovered.context.pending[0]!.inputId, 'inp_cont'].slice(-recovered.context.pending.length));
  const next = run(recovered, claim(30_001, 'own_b', 'exe_2'));
  assert.is(next.context.execution!.id, 'exe_2');
  assert.is(next.context.executions, 2);
});

test('machine - renew only while the claim is live and held; after expiry it is claim_lost', () => {
  let s = claimedBy();
  s = run(s, { type: 'renew', now: 10_000, ownerId: 'own_a', executionId: 'exe_1' });
  assert.is(s.context.execution!.expiresAt, 40_000);
  const late = decide(s, { type: 'renew', now: 40_000, ownerId: 'own_a', executionId: 'exe_1' });
  assert.equal([late.ok, !late.ok && late.reason], [false, 'claim_lost']);
  assert.match(!late.ok ? late.message : '', 'Session execution claim lost: exe_1');
  const stranger = decide(s, { type: 'renew', now: 1, ownerId: 'own_b', executionId: 'exe_1' });
  assert.is(stranger.ok, false);
});

test('machine - settlement after cancellation changes nothing', () => {
  let s = claimedBy();
  s = run(s, { type: 'start', now: 1, ownerId: 'own_a', executionId: 'exe_1' });
  s = run(s, { type: 'cancel', now: 2 });
  assert.is(stateOf(s), 'settled');
  for (const outcome of ['succeeded', 'failed'] as const) {
    const d = decide(s, { type: 'settle', now: 3, ownerId: 'own_a', executionId: 'exe_1', outcome });
    assert.equal([d.ok, !d.ok && d.reason], [false, 'cancelled']);
  }
  const write = decide(s, { type: 'record', now: 3, ownerId: 'own_a', executionId: 'exe_1', events: [{ type: 'step.started', payload: { executionId: 'exe_1', messageId: 'm', step: 0 } }] });
  assert.equal([write.ok, !write.ok && write.reason], [false, 'cancelled']);
  assert.is(s.context.execution!.outcome, 'cancelled');
});

test('machine - a claim snapshots the latest assistant sequence (-1 when none)', () => {
  let s = claimedBy();
  assert.is(s.context.execution!.assistantSeq, -1);
  s = run(s, { type: 'start', now: 1, ownerId: 'own_a', executionId: 'exe_1' });
  s = run(s, { type: 'record', now: 2, ownerId: 'own_a', executionId: 'exe_1', events: [{ type: 'step.started', payload: { executionId: 'exe_1', messageId: 'm1', step: 0 } }] });
  const stepSeq = s.context.seq;
  s = run(s, { type: 'settle', now: 3, ownerId: 'own_a', executionId: 'exe_1', outcome: 'succeeded' });
  s = run(run(s, admit(4)), claim(4, 'own_b', 'exe_2'));
  assert.is(s.context.execution!.assistantSeq, stepSeq);
});

test('machine - promotion is once: promoting an input that is not pending is refused loudly', () => {
  let s = initialSnapshot('ses_p');
  s = run(s, admit(0, 'inp_x'));
  s = run(s, claim(0, 'own_a', 'exe_1'));
  s = run(s, { type: 'start', now: 1, ownerId: 'own_a', executionId: 'exe_1' });
  const promote = (id: string): Command => ({ type: 'record', now: 2, ownerId: 'own_a', executionId: 'exe_1', events: [{ type: 'input.promoted', payload: { inputId: id, executionId: 'exe_1' } }] });
  s = run(s, promote('inp_x'));
  const again = decide(s, promote('inp_x'));
  assert.equal([again.ok, !again.ok && again.reason], [false, 'not_pending']);
  assert.match(!again.ok ? again.message : '', 'invariant violated');
  assert.equal(decide(s, admit(3, 'inp_x')).ok, false, 'the same input id is not admitted twice');
});

test('machine - runners may not write engine events; recovery may not touch a live lease', () => {
  let s = claimedBy();
  s = run(s, { type: 'start', now: 1, ownerId: 'own_a', executionId: 'exe_1' });
  const forged = decide(s, { type: 'record', now: 2, ownerId: 'own_a', executionId: 'exe_1', events: [{ type: 'execution.claimed', payload: { executionId: 'exe_9', ownerId: 'own_z', expiresAt: 1e12, leaseMs: 1, assistantSeq: -1 } }] });
  assert.equal([forged.ok, !forged.ok && forged.reason], [false, 'not_runner_event']);
  const early = decide(s, { type: 'recover', now: 29_999, continuationInputId: 'inp_c' });
  assert.equal([early.ok, !early.ok && early.reason], [false, 'lease_not_expired']);
});

test('machine - the same events replayed give the same state', () => {
  const sink: SessionEvent[] = [];
  let s = initialSnapshot('ses_r');
  const step = (c: Command) => {
    const d = decide(s, c);
    assert.ok(d.ok);
    const before = s.context.seq;
    s = commit(s, d.ok ? d.events : [], c.now);
    sink.push(...d.events.map((p, i) => ({ id: `evt_r${before + i}`, type: p.type, version: 1, sessionId: 'ses_r', seq: before + i + 1, time: c.now, payload: p.payload }) as SessionEvent));
  };
  step(admit(0));
  step(claim(0, 'own_a', 'exe_1'));
  step({ type: 'start', now: 1, ownerId: 'own_a', executionId: 'exe_1' });
  step({ type: 'renew', now: 5, ownerId: 'own_a', executionId: 'exe_1' });
  step({ type: 'cancel', now: 6 });
  const replayed = hydrate('ses_r', sink);
  assert.is(stateOf(replayed), stateOf(s));
  assert.equal(replayed.context, s.context);
  assert.throws(() => hydrate('ses_r', [sink[0]!, sink[2]!]), /expected 2/, 'a gap in the sequence is refused');
});

test('machine - refusals give times as ISO dates, not raw epoch milliseconds', () => {
  const now = Date.UTC(2026, 10, 30, 12, 0, 0);
  const s = run(run(initialSnapshot('ses_t'), admit(now)), claim(now, 'own_a', 'exe_1'));
  const live = decide(s, claim(now + 1000, 'own_b', 'exe_2'));
  assert.ok(!live.ok);
  assert.match(live.message, 'until 2026-11-30T12:00:30.000Z');
  assert.not.match(live.message, String(now + LEASE));
  const expired = decide(s, claim(now + LEASE + 1, 'own_b', 'exe_2'));
  assert.ok(!expired.ok);
  assert.match(expired.message, 'expired at 2026-11-30T12:00:30.000Z');
});

test.run();
