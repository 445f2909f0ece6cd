/**
 * Turns that wait (the session machine, pure): a turn records what it waits for (`wait.started`:
 * an approval of a tool call, a signal, a timer), settles `waiting` and holds nothing; `resolve`
 * ends each wait, and the last one admits the input that resumes the turn. The rules have tests of
 * their names: "never runs a tool a person denied", "never runs an approved call twice", "never
 * wakes a timer early".
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { stateOf } from '../../src/machines/decider.ts';
import type { Command, ProtoEvent } from '../../src/machines/commands.ts';
import { ev } from '../../src/testing/fixtures.ts';
import { deciderSpec } from '../support/decider-spec.ts';

const LEASE = 30_000;
const spec = deciderSpec('ses_w');
const own = { ownerId: 'own_a', executionId: 'exe_1' };
const record = (now: number, ...events: ProtoEvent[]): Command => ({ type: 'record', now, ...own, events });
const settle = (now: number, outcome: 'succeeded' | 'failed' | 'waiting'): Command => ({ type: 'settle', now, ...own, outcome });
const resolve = (now: number, kind: 'approval' | 'signal' | 'timer', name: string, outcome: string, extra: Partial<Command> = {}): Command =>
  ({ type: 'resolve', now, kind, name, outcome, continuationInputId: 'inp_resume_exe_1', ...extra }) as Command;
const claim2 = (now: number): Command => ({ type: 'claim', now, ownerId: 'own_b', executionId: 'exe_2', leaseMs: LEASE });

/** A started turn of exe_1 with a step whose two calls need approval (call_1 send_mail, call_2 delete_file). */
const running = () =>
  spec.given([
    ev('input.admitted'),
    ev('execution.claimed', { executionId: 'exe_1', ownerId: 'own_a', expiresAt: LEASE, leaseMs: LEASE, assistantSeq: -1 }),
    ev('execution.started'),
    ev('input.promoted'),
    ev('step.started', { executionId: 'exe_1', messageId: 'msg_1', step: 0 }),
  ]);
const approvalOf = (callId: string, tool: string): ProtoEvent[] => [
  {
    type: 'tool.called',
    payload: { executionId: 'exe_1', messageId: 'msg_1', callId, name: tool, input: { to: 'a' }, durable: true, idempotencyKey: `k_${callId}`, started: false },
  },
  { type: 'wait.started', payload: { executionId: 'exe_1', kind: 'approval', name: callId, messageId: 'msg_1', callId, tool, input: { to: 'a' } } },
];
/** The turn asked for both approvals and settled waiting at 1 000. */
const waiting = () =>
  running()
    .when(
      record(100, ...approvalOf('call_1', 'send_mail'), ...approvalOf('call_2', 'delete_file'), {
        type: 'step.ended',
        payload: { executionId: 'exe_1', messageId: 'msg_1', finish: 'tool-calls' },
      }),
    )
    .thenAccepted()
    .when(settle(1_000, 'waiting'))
    .then([{ type: 'execution.settled', payload: { executionId: 'exe_1', outcome: 'waiting' } }]);

test('waits - a turn that waits for approval settles waiting and holds nothing: no lease, no claim, its calls are not open work', () => {
  const s = waiting();
  assert.is(stateOf(s.snapshot), 'settled');
  const ctx = s.snapshot.context;
  assert.is(ctx.execution!.outcome, 'waiting');
  assert.equal(ctx.execution!.openTools, [], 'the calls wait for a person, not for recovery');
  assert.equal(
    ctx.waits.map((w) => [w.kind, w.name, w.tool, w.durable, w.idempotencyKey, w.outcome]),
    [
      ['approval', 'call_1', 'send_mail', true, 'k_call_1', null],
      ['approval', 'call_2', 'delete_file', true, 'k_call_2', null],
    ],
  );
  // a new prompt waits too: nothing runs before the turn resumes
  const more = s.when({ type: 'admit', now: 1_100, inputId: 'inp_2', prompt: 'and?', delivery: 'queue', wake: true }).thenAccepted();
  more.when(claim2(1_200)).thenRefused('waiting', 'approval of call call_1 (send_mail)');
  more.when({ type: 'recover', now: 99_000, continuationInputId: 'inp_x' }).thenRefused('nothing_to_recover');
});

test('waits - a settlement waiting from a turn that recorded no wait is refused', () => {
  running().when(settle(500, 'waiting')).thenRefused('nothing_to_wait_for', 'recorded no wait');
});

test('waits - several approvals wait together: the turn resumes only when the last is decided, with one continuation', () => {
  const s = waiting();
  const one = s.when(resolve(2_000, 'approval', 'call_1', 'approved', { reason: 'ok' })).then([
    {
      type: 'wait.resolved',
      payload: { executionId: 'exe_1', kind: 'approval', name: 'call_1', outcome: 'approved', messageId: 'msg_1', callId: 'call_1', reason: 'ok' },
    },
  ]);
  one.when(claim2(2_100)).thenRefused('waiting', 'call_2');
  const both = one.when(resolve(3_000, 'approval', 'call_2', 'denied', { reason: 'never delete' })).then((events) => {
    assert.equal(
      events.map((e) => e.type),
      ['wait.resolved', 'input.admitted'],
    );
    const admitted = events[1]!.payload as { source: string; continues: { reason: string; executionId: string; inputIds: string[] } };
    assert.is(admitted.source, 'recovery');
    assert.equal([admitted.continues.reason, admitted.continues.executionId, admitted.continues.inputIds], ['resumed', 'exe_1', ['inp_1']]);
  });
  both.when(claim2(3_100)).thenAccepted();
  both.when(resolve(3_200, 'approval', 'call_2', 'approved')).thenRefused('already_resolved', 'denied');
});

test('waits - a decision is made once: the same call again is already_resolved, an unknown call or a wrong outcome is refused', () => {
  const s = waiting();
  s.when(resolve(2_000, 'approval', 'call_9', 'approved')).thenRefused('no_such_wait', 'it waits for approval of call call_1');
  s.when(resolve(2_000, 'approval', 'call_1', 'elapsed')).thenRefused('wrong_outcome', 'approved or denied');
  s.when(resolve(2_000, 'signal', 'call_1', 'delivered')).thenRefused('no_such_wait');
  const once = s.when(resolve(2_000, 'approval', 'call_1', 'denied')).thenAccepted();
  once.when(resolve(2_001, 'approval', 'call_1', 'approved')).thenRefused('already_resolved', 'denied at');
});

test('waits - never runs a tool a person denied', () => {
  const resumed = waiting()
    .when(resolve(2_000, 'approval', 'call_1', 'approved'))
    .thenAccepted()
    .when(resolve(2_000, 'approval', 'call_2', 'denied'))
    .thenAccepted()
    .when(claim2(2_100))
    .thenAccepted()
    .when({ type: 'start', now: 2_100, ownerId: 'own_b', executionId: 'exe_2' })
    .thenAccepted();
  const start = (callId: string): Command => ({
    type: 'record',
    now: 2_200,
    ownerId: 'own_b',
    executionId: 'exe_2',
    events: [{ type: 'tool.started', payload: { executionId: 'exe_2', messageId: 'msg_1', callId } }],
  });
  resumed.when(start('call_2')).thenRefused('not_approved', 'never runs a tool a person denied');
  const ran = resumed.when(start('call_1')).thenAccepted();
  // the approved call is the resuming execution's open work now (recovery retries it with its key)
  assert.equal(
    ran.snapshot.context.execution!.openTools.map((t) => [t.callId, t.durable, t.idempotencyKey]),
    [['call_1', true, 'k_call_1']],
  );
});

test('waits - never runs an approved call twice', () => {
  const ran = waiting()
    .when(resolve(2_000, 'approval', 'call_1', 'approved'))
    .thenAccepted()
    .when(resolve(2_000, 'approval', 'call_2', 'approved'))
    .thenAccepted()
    .when(claim2(2_100))
    .thenAccepted()
    .when({ type: 'start', now: 2_100, ownerId: 'own_b', executionId: 'exe_2' })
    .thenAccepted();
  const start: Command = {
    type: 'record',
    now: 2_200,
    ownerId: 'own_b',
    executionId: 'exe_2',
    events: [{ type: 'tool.started', payload: { executionId: 'exe_2', messageId: 'msg_1', callId: 'call_1' } }],
  };
  const once = ran.when(start).thenAccepted();
  once.when({ ...start, now: 2_300 }).thenRefused('not_approved', 'never runs an approved call twice');
});

test('waits - never wakes a timer early: a timer elapses at its time, not a millisecond before; a signal times out only when it has a timeout', () => {
  const s = running()
    .when(
      record(
        100,
        { type: 'wait.started', payload: { executionId: 'exe_1', kind: 'timer', name: 'sleep-1', until: 60_000 } },
        { type: 'wait.started', payload: { executionId: 'exe_1', kind: 'signal', name: 'payment' } },
      ),
    )
    .thenAccepted()
    .when(settle(200, 'waiting'))
    .thenAccepted();
  s.when(resolve(59_999, 'timer', 'sleep-1', 'elapsed')).thenRefused('not_due', 'never wakes a timer early');
  s.when(resolve(70_000, 'signal', 'payment', 'timed_out')).thenRefused('not_due', 'has no timeout');
  const elapsed = s.when(resolve(60_000, 'timer', 'sleep-1', 'elapsed')).then((events) =>
    assert.equal(
      events.map((e) => e.type),
      ['wait.resolved'],
    ),
  );
  elapsed.when(resolve(60_001, 'signal', 'payment', 'delivered', { data: { paid: 12.5 } })).then((events) =>
    assert.equal(
      events.map((e) => e.type),
      ['wait.resolved', 'input.admitted'],
    ),
  );
});

test('waits - cancelling a waiting session ends its waits; the next prompt runs a new turn with no waits', () => {
  const s = waiting();
  const cancelled = s.when({ type: 'cancel', now: 2_000, reason: 'changed my mind' }).then((events) => {
    assert.equal(
      events.map((e) => [e.type, (e.payload as { name?: string }).name, (e.payload as { outcome?: string }).outcome]),
      [
        ['wait.resolved', 'call_1', 'cancelled'],
        ['wait.resolved', 'call_2', 'cancelled'],
      ],
    );
  });
  assert.equal(cancelled.snapshot.context.waits, []);
  cancelled.when({ type: 'cancel', now: 2_100 }).thenRefused('nothing_to_cancel');
  // a decision after the cancel is known as too late: the call was cancelled
  cancelled.when(resolve(2_200, 'approval', 'call_1', 'approved')).thenRefused('already_resolved', 'cancelled at');
  cancelled.when({ type: 'admit', now: 2_300, inputId: 'inp_2', prompt: 'p', delivery: 'queue', wake: true }).thenAccepted().when(claim2(2_400)).thenAccepted();
});

test('waits - a turn that fails or is cancelled while a wait is recorded ends the wait with it', () => {
  const asked = running()
    .when(record(100, { type: 'wait.started', payload: { executionId: 'exe_1', kind: 'signal', name: 'go' } }))
    .thenAccepted();
  asked.when({ ...settle(200, 'failed'), error: { type: 'model', message: 'boom' } } as Command).then((events) => {
    assert.equal(
      events.map((e) => e.type),
      ['step.failed', 'wait.resolved', 'execution.settled'],
    );
  });
  const cancelled = asked.when({ type: 'cancel', now: 200 }).then((events) => {
    assert.equal(
      events.map((e) => e.type),
      ['execution.cancelled', 'step.failed', 'wait.resolved'],
    );
  });
  assert.equal(cancelled.snapshot.context.waits, []);
});

test('waits - a turn that succeeds after waiting forgets its waits (the next turn starts with none)', () => {
  const s = running()
    .when(record(100, { type: 'wait.started', payload: { executionId: 'exe_1', kind: 'signal', name: 'go' } }))
    .thenAccepted()
    .when(settle(200, 'waiting'))
    .thenAccepted()
    .when(resolve(300, 'signal', 'go', 'delivered', { data: 1 }))
    .thenAccepted()
    .when(claim2(400))
    .thenAccepted()
    .when({ type: 'start', now: 400, ownerId: 'own_b', executionId: 'exe_2' })
    .thenAccepted();
  assert.equal(
    s.snapshot.context.waits.map((w) => [w.name, w.outcome, w.data]),
    [['go', 'delivered', 1]],
    'the resumed execution still sees the answer',
  );
  const done = s.when({ type: 'settle', now: 500, ownerId: 'own_b', executionId: 'exe_2', outcome: 'succeeded' }).thenAccepted();
  assert.equal(done.snapshot.context.waits, []);
  // sent again after its turn is over: known as delivered (the session remembers its latest waits decided)
  done.when(resolve(600, 'signal', 'go', 'delivered')).thenRefused('already_resolved', 'delivered at');
  done.when(resolve(600, 'signal', 'other', 'delivered')).thenRefused('no_such_wait');
});

test.run();
