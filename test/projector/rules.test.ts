/**
 * The projection rules, one table at a time, with hand-built committed events: what each event
 * writes, asserted on the real rows.
 */
import type { PromptPart } from '../../src/events/catalog.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { all, claimedTurn, message, row, setup } from './support.ts';
import { stream } from '../../src/testing/fixtures.ts';

test('projector - execution.claimed inserts the live claim; renew, phase and step.started update it', () => {
  const { db, projector } = setup();
  const s = stream();
  projector.apply([
    ...claimedTurn(s, 'ses_1', 'exe_1', 'inp_1'),
    s.ev('ses_1', 'execution.renewed', { executionId: 'exe_1', expiresAt: 40_000 }),
    s.ev('ses_1', 'execution.phase', { executionId: 'exe_1', phase: 'unknown' }),
    s.ev('ses_1', 'step.started', { executionId: 'exe_1', messageId: 'msg_1', step: 0 }),
  ]);
  assert.equal(all(db, 'session_execution'), [
    {
      id: 'exe_1',
      session_id: 'ses_1',
      owner_id: 'own_a',
      assistant_message_id: 'msg_1',
      phase: 'unknown',
      assistant_seq: -1,
      time_created: 2000,
      expires_at: 40_000,
      recovery_error: null,
    },
  ]);
});

test('projector - execution.claimed snapshots assistant_seq and starts in phase safe', () => {
  const { db, projector } = setup();
  const s = stream();
  projector.apply([s.ev('ses_1', 'execution.claimed', { executionId: 'exe_9', ownerId: 'own_b', expiresAt: 99, leaseMs: 30, assistantSeq: 17 })]);
  assert.equal(row(db, 'session_execution', 'id = ?', 'exe_9'), {
    id: 'exe_9',
    session_id: 'ses_1',
    owner_id: 'own_b',
    assistant_message_id: null,
    phase: 'safe',
    assistant_seq: 17,
    time_created: 1000,
    expires_at: 99,
    recovery_error: null,
  });
});

test('projector - settled, cancelled and recovery.completed delete the execution row', () => {
  for (const end of ['settled', 'cancelled', 'recovered'] as const) {
    const { db, projector } = setup();
    const s = stream();
    const events: SessionEvent[] = claimedTurn(s, 'ses_1', 'exe_1', 'inp_1');
    if (end === 'settled') events.push(s.ev('ses_1', 'execution.settled', { executionId: 'exe_1', outcome: 'succeeded' }));
    if (end === 'cancelled') events.push(s.ev('ses_1', 'execution.cancelled', { executionId: 'exe_1', reason: 'stop' }));
    if (end === 'recovered') {
      events.push(s.ev('ses_1', 'recovery.started', { executionId: 'exe_1' }));
      events.push(s.ev('ses_1', 'recovery.completed', { executionId: 'exe_1', assistantMessageId: null, continuationInputId: null, phase: 'safe' }));
    }
    projector.apply(events);
    assert.equal(all(db, 'session_execution'), [], end);
    assert.is(all(db, 'session_input').length, 1, `${end}: inputs stay`);
  }
});

test('projector - input.admitted inserts the input; wake_pending follows the admission', () => {
  const { db, projector } = setup();
  const s = stream();
  projector.apply([
    s.ev('ses_1', 'input.admitted', { inputId: 'inp_1', prompt: 'hello', delivery: 'steer', wake: true }),
    s.ev('ses_1', 'input.admitted', { inputId: 'inp_2', prompt: 'later', delivery: 'queue', wake: false }),
  ]);
  assert.equal(all(db, 'session_input'), [
    {
      id: 'inp_1',
      session_id: 'ses_1',
      prompt: 'hello',
      delivery: 'steer',
      admitted_seq: 1,
      promoted_seq: null,
      wake_pending: 1,
      time_created: 1000,
      dropped_seq: null,
      not_before: null,
      parts: null,
    },
    {
      id: 'inp_2',
      session_id: 'ses_1',
      prompt: 'later',
      delivery: 'queue',
      admitted_seq: 2,
      promoted_seq: null,
      wake_pending: 0,
      time_created: 2000,
      dropped_seq: null,
      not_before: null,
      parts: null,
    },
  ]);
});

test('projector - a claim takes no input: wake_pending stays until each input is promoted (a claim that dies must leave them findable)', () => {
  const { db, projector } = setup();
  const s = stream();
  projector.apply([
    s.ev('ses_1', 'input.admitted', { inputId: 'inp_1', prompt: 'a', delivery: 'queue', wake: true }),
    s.ev('ses_1', 'input.admitted', { inputId: 'inp_2', prompt: 'b', delivery: 'queue', wake: true }),
    s.ev('ses_2', 'input.admitted', { inputId: 'inp_3', prompt: 'c', delivery: 'queue', wake: true }),
    s.ev('ses_1', 'execution.claimed', { executionId: 'exe_1', ownerId: 'own_a', expiresAt: 30_000, leaseMs: 30_000, assistantSeq: -1 }),
  ]);
  assert.equal(
    all(db, 'session_input').map((r) => [r.id, r.wake_pending, r.promoted_seq]),
    [
      ['inp_1', 1, null],
      ['inp_2', 1, null],
      ['inp_3', 1, null],
    ],
  );
  projector.apply([s.ev('ses_1', 'input.promoted', { inputId: 'inp_1', executionId: 'exe_1' })]);
  assert.equal(
    all(db, 'session_input').map((r) => [r.id, r.wake_pending, r.promoted_seq]),
    [
      ['inp_1', 0, 4],
      ['inp_2', 1, null],
      ['inp_3', 1, null],
    ],
  );
});

test('projector - input.promoted sets promoted_seq, clears the wake and creates the user message', () => {
  const { db, projector } = setup();
  const s = stream();
  projector.apply([
    s.ev('ses_1', 'execution.claimed', { executionId: 'exe_1', ownerId: 'own_a', expiresAt: 30_000, leaseMs: 30_000, assistantSeq: -1 }),
    s.ev('ses_1', 'input.admitted', { inputId: 'inp_1', prompt: 'steer me', delivery: 'steer', wake: true }), // admitted during the turn
    s.ev('ses_1', 'input.promoted', { inputId: 'inp_1', executionId: 'exe_1' }),
  ]);
  assert.equal(row(db, 'session_input', 'id = ?', 'inp_1'), {
    id: 'inp_1',
    session_id: 'ses_1',
    prompt: 'steer me',
    delivery: 'steer',
    admitted_seq: 2,
    promoted_seq: 3,
    wake_pending: 0,
    time_created: 2000,
    dropped_seq: null,
    not_before: null,
    parts: null,
  });
  assert.equal(message(db, 'inp_1'), {
    id: 'inp_1',
    session_id: 'ses_1',
    type: 'user',
    seq: 3,
    time_created: 3000,
    time_updated: 3000,
    data: { prompt: 'steer me', delivery: 'steer', executionId: 'exe_1' },
  });
});

test('projector - a prompt of parts: the input row holds its text form and its parts, the user message the parts', () => {
  const { db, projector } = setup();
  const s = stream();
  const prompt = [
    { type: 'text', text: 'what is this?' },
    { type: 'image', url: 'https://example.com/cat.png' },
    { type: 'json', value: { n: 1 } },
  ] satisfies PromptPart[];
  projector.apply([
    s.ev('ses_1', 'input.admitted', { inputId: 'inp_1', prompt, delivery: 'queue', wake: true }),
    s.ev('ses_1', 'execution.claimed', { executionId: 'exe_1', ownerId: 'own_a', expiresAt: 30_000, leaseMs: 30_000, assistantSeq: -1 }),
    s.ev('ses_1', 'input.promoted', { inputId: 'inp_1', executionId: 'exe_1' }),
  ]);
  const input = row(db, 'session_input', 'id = ?', 'inp_1') as { prompt: string; parts: string };
  assert.is(input.prompt, 'what is this?\n[image https://example.com/cat.png]\n{"n":1}');
  assert.equal(JSON.parse(input.parts), prompt);
  assert.equal((message(db, 'inp_1') as { data: unknown }).data, { prompt, delivery: 'queue', executionId: 'exe_1' });
});

test('projector - an assistant step: text parts upserted in place, tools pending -> running -> completed | error, then completed', () => {
  const { db, projector } = setup();
  const s = stream();
  projector.apply(claimedTurn(s, 'ses_1', 'exe_1', 'inp_1'));
  const m = { executionId: 'exe_1', messageId: 'msg_1' };
  projector.apply([
    s.ev('ses_1', 'step.started', { ...m, step: 0 }),
    s.ev('ses_1', 'text.completed', { ...m, partId: 'prt_1', text: 'first draft' }),
    s.ev('ses_1', 'text.completed', { ...m, partId: 'prt_2', text: 'second part' }),
    s.ev('ses_1', 'text.completed', { ...m, partId: 'prt_1', text: 'final text' }),
    s.ev('ses_1', 'tool.called', { ...m, callId: 'call_1', name: 'search', input: { q: 'x' }, durable: true, idempotencyKey: 'ses_1:exe_1:call_1' }),
    s.ev('ses_1', 'tool.started', { ...m, callId: 'call_1' }),
    s.ev('ses_1', 'tool.succeeded', { ...m, callId: 'call_1', output: { hits: 2 } }),
    s.ev('ses_1', 'tool.called', { ...m, callId: 'call_2', name: 'write', input: 'file', durable: false }),
    s.ev('ses_1', 'tool.failed', { ...m, callId: 'call_2', error: { type: 'tool', name: 'EACCES', message: 'denied' } }),
  ]);
  let msg = message(db, 'msg_1')!;
  assert.equal(msg.data, {
    executionId: 'exe_1',
    step: 0,
    status: 'running',
    parts: [
      { id: 'prt_1', type: 'text', text: 'final text' },
      { id: 'prt_2', type: 'text', text: 'second part' },
    ],
    tools: [
      { callId: 'call_1', name: 'search', input: { q: 'x' }, durable: true, idempotencyKey: 'ses_1:exe_1:call_1', state: 'completed', output: { hits: 2 } },
      { callId: 'call_2', name: 'write', input: 'file', durable: false, state: 'error', error: { type: 'tool', message: 'denied', name: 'EACCES' } },
    ],
  });
  assert.equal([msg.type, msg.seq, msg.time_created, msg.time_updated], ['assistant', 5, 5000, 13_000]);
  projector.apply([s.ev('ses_1', 'step.ended', { ...m, finish: 'stop' })]);
  msg = message(db, 'msg_1')!;
  assert.equal([msg.data.status, msg.data.finish, msg.time_updated], ['completed', 'stop', 14_000]);
  assert.is(row(db, 'session_execution', 'id = ?', 'exe_1')!.assistant_message_id, 'msg_1');
});

test('projector - a tool.called that starts its call (version 2) and a version-1 tool.called then tool.started make the same row', () => {
  const rowsOf = (tail: (s: ReturnType<typeof stream>, m: { executionId: string; messageId: string }) => SessionEvent[]) => {
    const { db, projector } = setup();
    const s = stream();
    const m = { executionId: 'exe_1', messageId: 'msg_1' };
    projector.apply([...claimedTurn(s, 'ses_1', 'exe_1', 'inp_1'), s.ev('ses_1', 'step.started', { ...m, step: 0 }), ...tail(s, m)]);
    return message(db, 'msg_1')!.data.tools;
  };
  const call = { callId: 'call_1', name: 'search', input: { q: 'x' }, durable: false };
  const now = rowsOf((s, m) => [s.ev('ses_1', 'tool.called', { ...m, ...call, started: true })]);
  const before = rowsOf((s, m) => {
    const called = s.ev('ses_1', 'tool.called', { ...m, ...call });
    const { started: _v2, ...v1 } = called.payload;
    return [{ ...called, version: 1, payload: v1 } as SessionEvent, s.ev('ses_1', 'tool.started', { ...m, callId: 'call_1' })];
  });
  assert.equal(now, [{ ...call, state: 'running' }]);
  assert.equal(before, now);
});

test('projector - step.failed and step.recovered seal a running message with their error or reason', () => {
  const { db, projector } = setup();
  const s = stream();
  projector.apply([
    ...claimedTurn(s, 'ses_1', 'exe_1', 'inp_1'),
    s.ev('ses_1', 'step.started', { executionId: 'exe_1', messageId: 'msg_1', step: 0 }),
    s.ev('ses_1', 'step.failed', { executionId: 'exe_1', messageId: 'msg_1', error: { type: 'model', message: 'overloaded', name: 'APIError' } }),
    s.ev('ses_1', 'step.started', { executionId: 'exe_1', messageId: 'msg_2', step: 1 }),
    s.ev('ses_1', 'step.recovered', { executionId: 'exe_1', messageId: 'msg_2', reason: 'lease expired' }),
  ]);
  assert.equal(message(db, 'msg_1')!.data, {
    executionId: 'exe_1',
    step: 0,
    status: 'failed',
    parts: [],
    tools: [],
    error: { type: 'model', message: 'overloaded', name: 'APIError' },
  });
  assert.equal(message(db, 'msg_2')!.data, { executionId: 'exe_1', step: 1, status: 'recovered', parts: [], tools: [], reason: 'lease expired' });
  assert.is(row(db, 'session_execution', 'id = ?', 'exe_1')!.assistant_message_id, 'msg_2');
});

test('projector - step.started on a running message of the same execution continues it (parts and tools kept, seq unchanged)', () => {
  const { db, projector } = setup();
  const s = stream();
  const m = { executionId: 'exe_1', messageId: 'msg_1' };
  projector.apply([
    ...claimedTurn(s, 'ses_1', 'exe_1', 'inp_1'),
    s.ev('ses_1', 'step.started', { ...m, step: 0 }),
    s.ev('ses_1', 'text.completed', { ...m, partId: 'prt_1', text: 'before overflow' }),
    s.ev('ses_1', 'compaction.started', { executionId: 'exe_1', messageId: 'msg_c', reason: 'context overflow' }),
    s.ev('ses_1', 'compaction.completed', { executionId: 'exe_1', messageId: 'msg_c', summary: 'short' }),
    s.ev('ses_1', 'step.started', { ...m, step: 0 }),
  ]);
  const msg = message(db, 'msg_1')!;
  assert.equal([msg.seq, msg.time_updated, msg.data.status, msg.data.parts.length], [5, 9000, 'running', 1]);
  assert.equal(message(db, 'msg_c'), {
    id: 'msg_c',
    session_id: 'ses_1',
    type: 'compaction',
    seq: 7,
    time_created: 7000,
    time_updated: 8000,
    data: { executionId: 'exe_1', reason: 'context overflow', status: 'completed', summary: 'short' },
  });
});

test('projector - recovery.completed with a continuation inserts the recovery row; without one, none', () => {
  const { db, projector } = setup();
  const s = stream();
  const error = { type: 'unknown', message: 'the owner vanished' };
  projector.apply([
    ...claimedTurn(s, 'ses_1', 'exe_1', 'inp_1'),
    s.ev('ses_1', 'step.started', { executionId: 'exe_1', messageId: 'msg_1', step: 0 }),
    s.ev('ses_1', 'recovery.started', { executionId: 'exe_1' }),
    s.ev('ses_1', 'step.recovered', { executionId: 'exe_1', messageId: 'msg_1', reason: 'expired' }),
    s.ev('ses_1', 'input.admitted', { inputId: 'inp_cont_exe_1', prompt: 'continue', delivery: 'queue', wake: true, source: 'recovery' }),
    s.ev('ses_1', 'recovery.completed', { executionId: 'exe_1', assistantMessageId: 'msg_1', continuationInputId: 'inp_cont_exe_1', phase: 'unknown', error }),
    ...claimedTurn(s, 'ses_2', 'exe_2', 'inp_2'),
    s.ev('ses_2', 'recovery.started', { executionId: 'exe_2' }),
    s.ev('ses_2', 'recovery.completed', { executionId: 'exe_2', assistantMessageId: null, continuationInputId: null, phase: 'safe' }),
  ]);
  assert.equal(all(db, 'session_recovery'), [
    {
      session_id: 'ses_1',
      execution_id: 'exe_1',
      assistant_message_id: 'msg_1',
      continuation_message_id: 'inp_cont_exe_1',
      phase: 'unknown',
      wake_pending: 1,
      wake_attempts: 0,
      recovery_error: JSON.stringify(error),
      time_created: 9000,
    },
  ]);
  assert.equal(all(db, 'session_execution'), [], 'both recovered executions are gone');
});

test('projector - recovery wakes: requested counts attempts, failed records the error (parked or not), delivered and claims clear the wake', () => {
  const { db, projector } = setup();
  const s = stream();
  const recovered = (sessionId: string, executionId: string) => [
    ...claimedTurn(s, sessionId, executionId, `inp_${executionId}`),
    s.ev(sessionId, 'recovery.started', { executionId }),
    s.ev(sessionId, 'input.admitted', { inputId: `inp_cont_${executionId}`, prompt: 'continue', delivery: 'queue', wake: true, source: 'recovery' }),
    s.ev(sessionId, 'recovery.completed', { executionId, assistantMessageId: null, continuationInputId: `inp_cont_${executionId}`, phase: 'safe' }),
  ];
  const wake = (_sessionId: string, executionId: string) =>
    all(db, 'session_recovery')
      .filter((r) => r.execution_id === executionId)
      .map((r) => [r.wake_pending, r.wake_attempts, r.recovery_error && JSON.parse(r.recovery_error as string)])[0];
  projector.apply([...recovered('ses_1', 'exe_1'), ...recovered('ses_2', 'exe_2'), ...recovered('ses_3', 'exe_3')]);
  const refused = { type: 'wake_refused', message: 'busy' };
  projector.apply([
    s.ev('ses_1', 'recovery.wake_requested', { executionId: 'exe_1', attempt: 1 }),
    s.ev('ses_1', 'recovery.wake_failed', { executionId: 'exe_1', attempt: 1, error: refused, parked: false }),
    s.ev('ses_1', 'recovery.wake_requested', { executionId: 'exe_1', attempt: 2 }),
  ]);
  assert.equal(wake('ses_1', 'exe_1'), [1, 2, refused]);
  const exhausted = { type: 'wake_exhausted', message: 'gave up' };
  projector.apply([s.ev('ses_1', 'recovery.wake_failed', { executionId: 'exe_1', attempt: 2, error: exhausted, parked: true })]);
  assert.equal(wake('ses_1', 'exe_1'), [0, 2, exhausted], 'parked: no longer pending, visibly failed');
  // the claim that lands: wake_delivered in the same append, and the claim itself clears the wake
  projector.apply([
    s.ev('ses_2', 'execution.claimed', { executionId: 'exe_4', ownerId: 'own_b', expiresAt: 90_000, leaseMs: 30_000, assistantSeq: -1 }),
    s.ev('ses_2', 'recovery.wake_delivered', { executionId: 'exe_2', byExecutionId: 'exe_4' }),
    s.ev('ses_3', 'execution.claimed', { executionId: 'exe_5', ownerId: 'own_b', expiresAt: 90_000, leaseMs: 30_000, assistantSeq: -1 }),
  ]);
  assert.equal(wake('ses_2', 'exe_2'), [0, 0, null]);
  assert.equal(wake('ses_3', 'exe_3'), [0, 0, null], 'a claim alone clears the wake');
  assert.equal(
    all(db, 'session_execution').map((r) => r.id),
    ['exe_4', 'exe_5'],
  );
  assert.equal(
    all(db, 'session_execution').map((r) => r.recovery_error),
    [null, null],
    'the recovered executions have no row left to carry a wake error',
  );
});

test('projector - time_updated is the time of the last event that changed the message', () => {
  const { db, projector } = setup();
  const s = stream();
  const m = { executionId: 'exe_1', messageId: 'msg_1' };
  projector.apply([
    ...claimedTurn(s, 'ses_1', 'exe_1', 'inp_1'),
    s.ev('ses_1', 'step.started', { ...m, step: 0 }, { time: 50 }),
    s.ev('ses_1', 'text.completed', { ...m, partId: 'p', text: 't' }, { time: 60 }),
    s.ev('ses_1', 'execution.renewed', { executionId: 'exe_1', expiresAt: 70_000 }, { time: 70 }),
  ]);
  const msg = message(db, 'msg_1')!;
  assert.equal([msg.time_created, msg.time_updated], [50, 60]);
});

test('projector - waits: wait.started opens a session_wait row and marks its call awaiting approval; wait.resolved closes both, once', () => {
  const { db, projector } = setup();
  const s = stream();
  projector.apply(claimedTurn(s, 'ses_1', 'exe_1', 'inp_1'));
  const m = { executionId: 'exe_1', messageId: 'msg_1' };
  projector.apply([
    s.ev('ses_1', 'step.started', { ...m, step: 0 }),
    s.ev('ses_1', 'tool.called', { ...m, callId: 'call_1', name: 'deploy', input: { to: 'prod' }, durable: true, idempotencyKey: 'k1' }),
    s.ev('ses_1', 'wait.started', { executionId: 'exe_1', kind: 'approval', name: 'call_1', messageId: 'msg_1', callId: 'call_1', tool: 'deploy' }),
    s.ev('ses_1', 'wait.started', { executionId: 'exe_1', kind: 'timer', name: 'sleep-0', until: 90_000 }),
  ]);
  assert.equal(
    all(db, 'session_wait').map((w) => [w.kind, w.name, w.call_id, w.until, w.outcome]),
    [
      ['approval', 'call_1', 'call_1', null, null],
      ['timer', 'sleep-0', null, 90_000, null],
    ],
  );
  assert.is(message(db, 'msg_1')!.data.tools[0].state, 'awaiting_approval');
  projector.apply([
    s.ev('ses_1', 'wait.resolved', {
      executionId: 'exe_1',
      kind: 'approval',
      name: 'call_1',
      outcome: 'denied',
      callId: 'call_1',
      messageId: 'msg_1',
      reason: 'not today',
    }),
  ]);
  const decided = row(db, 'session_wait', 'name = ?', 'call_1')!;
  assert.equal([decided.outcome, decided.time_resolved], ['denied', 9000]);
  const tool = message(db, 'msg_1')!.data.tools[0];
  assert.equal([tool.state, tool.decision], ['denied', { outcome: 'denied', time: 9000, reason: 'not today' }]);
  // a second resolution of the same wait is a broken log, not a silent overwrite
  assert.throws(
    () =>
      projector.apply([
        s.ev('ses_1', 'wait.resolved', { executionId: 'exe_1', kind: 'approval', name: 'call_1', outcome: 'approved', callId: 'call_1', messageId: 'msg_1' }),
      ]),
    /not an open wait/,
  );
  assert.is(row(db, 'session_wait', 'name = ?', 'call_1')!.outcome, 'denied', 'the rejected batch changed nothing');
});
test.run();
