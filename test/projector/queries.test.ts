/**
 * The read queries the engine uses over the projection: owed wakes, expired executions, a
 * session's rows, the session list.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { dueWaits, expiredExecutions, listSessions, pendingWakes, runnableSessions, sessionRows } from '../../src/projector/queries.ts';
import { parseMessage } from '../../src/projector/message-rows.ts';
import { claimedTurn, setup } from './support.ts';
import { stream, type Stream } from '../../src/testing/fixtures.ts';

const claim = (s: Stream, sessionId: string, executionId: string, expiresAt: number) =>
  s.ev(sessionId, 'execution.claimed', { executionId, ownerId: 'own_a', expiresAt, leaseMs: 30_000, assistantSeq: -1 });

test('queries - pendingWakes: unpromoted admissions that asked for a wake, and recoveries whose wake has not landed', () => {
  const { db, projector } = setup();
  const s = stream();
  const admit = (sessionId: string, inputId: string, wake: boolean) => s.ev(sessionId, 'input.admitted', { inputId, prompt: 'p', delivery: 'queue', wake });
  const recover = (sessionId: string, executionId: string) => [
    claim(s, sessionId, executionId, 10),
    s.ev(sessionId, 'recovery.started', { executionId }),
    s.ev(sessionId, 'input.admitted', { inputId: `inp_cont_${executionId}`, prompt: 'continue', delivery: 'queue', wake: true, source: 'recovery' }),
    s.ev(sessionId, 'recovery.completed', { executionId, assistantMessageId: null, continuationInputId: `inp_cont_${executionId}`, phase: 'safe' }),
  ];
  projector.apply([
    admit('ses_woken', 'inp_1', true),
    admit('ses_quiet', 'inp_2', false),
    ...recover('ses_rec', 'exe_r'),
    ...recover('ses_parked', 'exe_p'),
    s.ev('ses_parked', 'recovery.wake_failed', { executionId: 'exe_p', attempt: 5, error: { type: 'wake_exhausted', message: 'gave up' }, parked: true }),
  ]);
  // the continuation inputs were admitted after the recovered claim, so they still ask for a wake too
  assert.equal(pendingWakes(db), ['ses_parked', 'ses_rec', 'ses_woken']);
  projector.apply([
    claim(s, 'ses_woken', 'exe_1', 100),
    claim(s, 'ses_rec', 'exe_2', 100),
    s.ev('ses_rec', 'recovery.wake_delivered', { executionId: 'exe_r', byExecutionId: 'exe_2' }),
    s.ev('ses_parked', 'execution.claimed', { executionId: 'exe_3', ownerId: 'own_hand', expiresAt: 100, leaseMs: 30_000, assistantSeq: -1 }),
  ]);
  assert.equal(pendingWakes(db), ['ses_parked', 'ses_rec', 'ses_woken'], 'a claim alone takes no input: each still waits to be promoted');
  assert.equal(
    runnableSessions(db, 0),
    ['ses_parked', 'ses_quiet', 'ses_rec', 'ses_woken'],
    'runnable: every session with an unpromoted input, whatever its flags',
  );
  projector.apply([
    s.ev('ses_woken', 'input.promoted', { inputId: 'inp_1', executionId: 'exe_1' }),
    s.ev('ses_rec', 'input.promoted', { inputId: 'inp_cont_exe_r', executionId: 'exe_2' }),
    s.ev('ses_parked', 'input.promoted', { inputId: 'inp_cont_exe_p', executionId: 'exe_3' }),
  ]);
  assert.equal(pendingWakes(db), [], "promotion is where an input's wake lands");
  assert.equal(runnableSessions(db, 0), ['ses_quiet'], 'the wake: false input is still there to be run by a wake');
});

test('queries - expiredExecutions: live rows whose lease ended at or before now', () => {
  const { db, projector } = setup();
  const s = stream();
  projector.apply([
    claim(s, 'ses_1', 'exe_1', 200),
    claim(s, 'ses_2', 'exe_2', 100),
    claim(s, 'ses_3', 'exe_3', 50),
    s.ev('ses_3', 'execution.settled', { executionId: 'exe_3', outcome: 'succeeded' }),
  ]);
  assert.equal(expiredExecutions(db, 99), []);
  assert.equal(
    expiredExecutions(db, 100).map((r) => [r.id, r.session_id, r.expires_at]),
    [['exe_2', 'ses_2', 100]],
  );
  assert.equal(
    expiredExecutions(db, 1_000).map((r) => r.id),
    ['exe_2', 'exe_1'],
    'oldest expiry first; settled ones are gone',
  );
});

test('queries - a scheduled prompt is runnable from its time on; dueWaits: open timers and signal timeouts whose time came', () => {
  const { db, projector } = setup();
  const s = stream();
  projector.apply([
    s.ev('ses_later', 'input.admitted', { inputId: 'inp_1', prompt: 'at nine', delivery: 'queue', wake: true, notBefore: 9_000 }),
    ...claimedTurn(s, 'ses_wait', 'exe_1', 'inp_2'),
    s.ev('ses_wait', 'wait.started', { executionId: 'exe_1', kind: 'timer', name: 'sleep-1', until: 5_000 }),
    s.ev('ses_wait', 'wait.started', { executionId: 'exe_1', kind: 'signal', name: 'reply', until: 7_000 }),
    s.ev('ses_wait', 'wait.started', { executionId: 'exe_1', kind: 'signal', name: 'forever' }),
  ]);
  assert.equal(runnableSessions(db, 8_999), [], 'not before its time');
  assert.equal(runnableSessions(db, 9_000), ['ses_later']);
  assert.equal(dueWaits(db, 4_999), []);
  assert.equal(
    dueWaits(db, 7_000).map((w) => [w.session_id, w.kind, w.name]),
    [
      ['ses_wait', 'timer', 'sleep-1'],
      ['ses_wait', 'signal', 'reply'],
    ],
    'a signal without a timeout is never due',
  );
  projector.apply([s.ev('ses_wait', 'wait.resolved', { executionId: 'exe_1', kind: 'timer', name: 'sleep-1', outcome: 'elapsed' })]);
  assert.equal(
    dueWaits(db, 7_000).map((w) => w.name),
    ['reply'],
    'an ended wait is no longer due',
  );
});

test('queries - sessionRows and listSessions', () => {
  const { db, projector } = setup();
  const s = stream();
  projector.apply([
    ...claimedTurn(s, 'ses_1', 'exe_1', 'inp_1'),
    s.ev('ses_1', 'step.started', { executionId: 'exe_1', messageId: 'msg_1', step: 0 }),
    s.ev('ses_1', 'input.admitted', { inputId: 'inp_2', prompt: 'next', delivery: 'queue', wake: true }),
    s.ev('ses_2', 'input.admitted', { inputId: 'inp_3', prompt: 'other', delivery: 'queue', wake: false }),
  ]);
  const rows = sessionRows(db, 'ses_1');
  assert.equal(
    rows.executions.map((r) => [r.id, r.assistant_message_id]),
    [['exe_1', 'msg_1']],
  );
  assert.equal(
    rows.inputs.map((r) => [r.id, r.promoted_seq]),
    [
      ['inp_1', 4],
      ['inp_2', null],
    ],
  );
  assert.equal(
    rows.messages.map(parseMessage).map((m) => [m.type, m.row.seq, m.type === 'assistant' ? m.data.status : m.type]),
    [
      ['user', 4, 'user'],
      ['assistant', 5, 'running'],
    ],
  );
  assert.equal(rows.recoveries, []);
  assert.equal(sessionRows(db, 'ses_none'), { sessionId: 'ses_none', executions: [], inputs: [], messages: [], recoveries: [] });
  assert.equal(listSessions(db), [
    { sessionId: 'ses_1', executions: 1, pendingInputs: 1, messages: 2, owedWakes: 0, lastActivity: 6000 },
    { sessionId: 'ses_2', executions: 0, pendingInputs: 1, messages: 0, owedWakes: 0, lastActivity: 7000 },
  ]);
});

test.run();
