/**
 * Fail fast on an inconsistent stream: every rule that a batch breaks throws a named SessiondError
 * (never a silent skip), the error names the event, and nothing of the batch is applied.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode, type ErrorCode as Code, ProjectionError } from '../../src/errors.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { projectionHash } from '../../src/projector/rebuild.ts';
import { claimedTurn, setup } from './support.ts';
import { expectCode, stream, type Stream } from '../../src/testing/fixtures.ts';

type S = Stream;
const m1 = { executionId: 'exe_1', messageId: 'msg_1' };

/** Given a session with a claimed turn (and whatever `given` adds), applying `when` fails with `code`. */
function refuses(given: (s: S) => SessionEvent[], when: (s: S) => SessionEvent[], code: Code, includes: string) {
  const { db, projector } = setup();
  const s = stream();
  projector.apply([...claimedTurn(s, 'ses_1', 'exe_1', 'inp_1'), ...given(s)]);
  const before = { hash: projectionHash(db), checkpoint: projector.checkpoint() };
  const err = expectCode(() => projector.apply(when(s)), code, includes);
  assert.equal({ hash: projectionHash(db), checkpoint: projector.checkpoint() }, before, `nothing of the batch was applied (${includes})`);
  return err;
}

const started = (s: S, messageId = 'msg_1') => [s.ev('ses_1', 'step.started', { executionId: 'exe_1', messageId, step: 0 })];
const called = (s: S) => [...started(s), s.ev('ses_1', 'tool.called', { ...m1, callId: 'call_1', name: 'search', input: {}, durable: false })];

test('fail fast - a second step.started for a finished message is a duplicate start', () => {
  const seal = {
    completed: (s: S) => s.ev('ses_1', 'step.ended', { ...m1, finish: 'stop' }),
    failed: (s: S) => s.ev('ses_1', 'step.failed', { ...m1, error: { type: 'model', message: 'x' } }),
    recovered: (s: S) => s.ev('ses_1', 'step.recovered', { ...m1, reason: 'expired' }),
  };
  for (const [status, end] of Object.entries(seal)) {
    refuses(
      (s) => [...started(s), end(s)],
      (s) => started(s),
      ErrorCode.InconsistentStream,
      `step.started for message msg_1, which is already ${status}: a finished step is never restarted (a duplicate start); start a new message.`,
    );
  }
});

test('fail fast - a step continues only within its own execution', () => {
  refuses(
    (s) => [...started(s), s.ev('ses_1', 'execution.settled', { executionId: 'exe_1', outcome: 'failed' }), ...claimedTurn(s, 'ses_1', 'exe_2', 'inp_2')],
    (s) => [s.ev('ses_1', 'step.started', { executionId: 'exe_2', messageId: 'msg_1', step: 0 })],
    ErrorCode.InconsistentStream,
    'step.started by execution exe_2 for message msg_1 of execution exe_1: an execution writes only into its own messages.',
  );
});

test('fail fast - step.ended, step.failed, step.recovered for an unknown or already finished message', () => {
  const ends = [
    (s: S) => s.ev('ses_1', 'step.ended', { ...m1, finish: 'stop' }),
    (s: S) => s.ev('ses_1', 'step.failed', { ...m1, error: { type: 'model', message: 'x' } }),
    (s: S) => s.ev('ses_1', 'step.recovered', { ...m1, reason: 'expired' }),
  ];
  for (const end of ends) {
    const type = end(stream()).type;
    refuses(
      () => [],
      (s) => [end(s)],
      ErrorCode.InconsistentStream,
      `${type} for message msg_1, which does not exist in session ses_1: a step is sealed only after its step.started.`,
    );
    refuses(
      (s) => [...started(s), s.ev('ses_1', 'step.ended', { ...m1, finish: 'stop' })],
      (s) => [end(s)],
      ErrorCode.InconsistentStream,
      `${type} for message msg_1, which is already completed: a step is sealed once.`,
    );
  }
});

test('fail fast - text.completed or tool.* for a message that does not exist', () => {
  const writes = [
    (s: S) => s.ev('ses_1', 'text.completed', { ...m1, partId: 'p', text: 't' }),
    (s: S) => s.ev('ses_1', 'tool.called', { ...m1, callId: 'call_1', name: 'n', input: 1, durable: false }),
    (s: S) => s.ev('ses_1', 'tool.started', { ...m1, callId: 'call_1' }),
    (s: S) => s.ev('ses_1', 'tool.succeeded', { ...m1, callId: 'call_1', output: 1 }),
    (s: S) => s.ev('ses_1', 'tool.failed', { ...m1, callId: 'call_1', error: { type: 'tool', message: 'x' } }),
  ];
  for (const write of writes) {
    refuses(
      () => [],
      (s) => [write(s)],
      ErrorCode.InconsistentStream,
      `${write(stream()).type} for message msg_1, which does not exist in session ses_1`,
    );
  }
});

test('fail fast - tool.started, tool.succeeded, tool.failed before its tool.called', () => {
  for (const type of ['tool.started', 'tool.succeeded', 'tool.failed'] as const) {
    const payload = { ...m1, callId: 'call_9', output: 1, error: { type: 'tool', message: 'x' } };
    refuses(
      (s) => called(s),
      (s) => [s.ev('ses_1', type, payload as never)],
      ErrorCode.InconsistentStream,
      `${type} for call call_9 in message msg_1, which was never called: tool.called comes first.`,
    );
  }
});

test('fail fast - a tool error name never changes: dies with exactly "Tool error name changed for <callId>: <old> -> <new>"', () => {
  const failed = (s: S, name: string) =>
    s.ev('ses_1', 'tool.failed', { ...m1, callId: 'call_1', error: { type: 'tool', name, message: `failed with ${name}` } });
  const err = refuses(
    (s) => [...called(s), failed(s, 'TimeoutError')],
    (s) => [failed(s, 'TypeError')],
    ErrorCode.InconsistentStream,
    'Tool error name changed for call_1',
  );
  assert.instance(err, ProjectionError);
  assert.is((err.cause as Error).message, 'Tool error name changed for call_1: TimeoutError -> TypeError');
  assert.ok(err.message.startsWith('Tool error name changed for call_1: TimeoutError -> TypeError ['), err.message);
  // the same name again is a repeated failure, not a change: the newest error is kept
  const { projector } = setup();
  const s = stream();
  projector.apply([...claimedTurn(s, 'ses_1', 'exe_1', 'inp_1'), ...called(s), failed(s, 'TimeoutError'), failed(s, 'TimeoutError')]);
});

test('fail fast - a second tool.called with the same call id in a message', () => {
  refuses(
    (s) => called(s),
    (s) => [s.ev('ses_1', 'tool.called', { ...m1, callId: 'call_1', name: 'other', input: {}, durable: false })],
    ErrorCode.InconsistentStream,
    'tool.called for call call_1 in message msg_1, which was already called (as search): call ids are unique per message.',
  );
});

test('fail fast - a call starts once and ends once', () => {
  const start = (s: S) => s.ev('ses_1', 'tool.started', { ...m1, callId: 'call_1' });
  const succeed = (s: S) => s.ev('ses_1', 'tool.succeeded', { ...m1, callId: 'call_1', output: 'ok' });
  const fail = (s: S) => s.ev('ses_1', 'tool.failed', { ...m1, callId: 'call_1', error: { type: 'tool', message: 'x' } });
  refuses(
    (s) => [...called(s), start(s)],
    (s) => [start(s)],
    ErrorCode.InconsistentStream,
    'tool.started for call call_1 in message msg_1, which is already running: a call starts once.',
  );
  refuses(
    (s) => [...called(s), succeed(s)],
    (s) => [succeed(s)],
    ErrorCode.InconsistentStream,
    'tool.succeeded for call call_1 in message msg_1, which already ended (completed): a call ends once.',
  );
  refuses(
    (s) => [...called(s), fail(s)],
    (s) => [succeed(s)],
    ErrorCode.InconsistentStream,
    'which already ended (error)',
  );
  refuses(
    (s) => [...called(s), succeed(s)],
    (s) => [fail(s)],
    ErrorCode.InconsistentStream,
    'tool.failed for call call_1 in message msg_1, which already ended (completed)',
  );
});

test('fail fast - text and new tool calls only while the step runs; open calls may still end after it is sealed', () => {
  const ended = (s: S) => [...called(s), s.ev('ses_1', 'step.ended', { ...m1, finish: 'stop' })];
  refuses(
    ended,
    (s) => [s.ev('ses_1', 'text.completed', { ...m1, partId: 'p', text: 'late' })],
    ErrorCode.InconsistentStream,
    'text.completed for message msg_1, which is already completed: text is added only while the step runs.',
  );
  refuses(
    ended,
    (s) => [s.ev('ses_1', 'tool.called', { ...m1, callId: 'call_2', name: 'n', input: 1, durable: false })],
    ErrorCode.InconsistentStream,
    'tool.called for message msg_1, which is already completed: tools are called only while the step runs.',
  );
  const { projector } = setup();
  const s = stream();
  projector.apply([
    ...claimedTurn(s, 'ses_1', 'exe_1', 'inp_1'),
    ...ended(s),
    s.ev('ses_1', 'tool.failed', { ...m1, callId: 'call_1', error: { type: 'interrupted', message: 'sealed' } }),
  ]);
});

test('fail fast - an input promoted twice is an invariant violation, loudly', () => {
  const err = refuses(
    (_s) => [],
    (s) => [s.ev('ses_1', 'input.promoted', { inputId: 'inp_1', executionId: 'exe_1' })],
    ErrorCode.InvariantViolation,
    'Input inp_1 of session ses_1 promoted twice (first at seq 4, again at seq 5)',
  );
  assert.is((err.cause as Error).message, 'Input inp_1 of session ses_1 promoted twice (first at seq 4, again at seq 5)');
  refuses(
    () => [],
    (s) => [s.ev('ses_1', 'input.promoted', { inputId: 'inp_404', executionId: 'exe_1' })],
    ErrorCode.InvariantViolation,
    'Input inp_404 of session ses_1 promoted at seq 5 but never admitted',
  );
  refuses(
    () => [],
    (s) => [s.ev('ses_2', 'input.promoted', { inputId: 'inp_1', executionId: 'exe_1' })],
    ErrorCode.InvariantViolation,
    'Input inp_1 of session ses_2 promoted at seq 1 but never admitted',
  );
});

test('fail fast - an input admitted twice in one session (input ids are per session: another session may reuse one)', () => {
  const admit = (s: S, sessionId: string) => s.ev(sessionId, 'input.admitted', { inputId: 'inp_1', prompt: 'again', delivery: 'queue', wake: false });
  refuses(
    () => [],
    (s) => [admit(s, 'ses_1')],
    ErrorCode.InconsistentStream,
    'Input inp_1 of session ses_1 admitted twice (first at seq 1, again at seq 5)',
  );
});

test('fail fast - message ids collide across types and sessions', () => {
  refuses(
    () => [],
    (s) => [s.ev('ses_1', 'text.completed', { executionId: 'exe_1', messageId: 'inp_1', partId: 'p', text: 't' })],
    ErrorCode.InconsistentStream,
    'text.completed for message inp_1, which is a user message, not an assistant message',
  );
  refuses(
    (s) => started(s),
    (s) => [s.ev('ses_2', 'step.ended', { ...m1, finish: 'stop' })],
    ErrorCode.InconsistentStream,
    'step.ended for message msg_1, which does not exist in session ses_2',
  );
  refuses(
    (s) => started(s),
    (s) => [s.ev('ses_1', 'compaction.started', { ...m1, reason: 'r' })],
    ErrorCode.InconsistentStream,
    'compaction.started for message msg_1, which already exists (a assistant message of session ses_1)',
  );
  refuses(
    (s) => [
      s.ev('ses_1', 'step.started', { executionId: 'exe_1', messageId: 'inp_2', step: 0 }),
      s.ev('ses_1', 'input.admitted', { inputId: 'inp_2', prompt: 'p', delivery: 'steer', wake: false }),
    ],
    (s) => [s.ev('ses_1', 'input.promoted', { inputId: 'inp_2', executionId: 'exe_1' })],
    ErrorCode.InconsistentStream,
    'input.promoted of input inp_2: message id inp_2 is already a assistant message of session ses_1',
  );
});

test('fail fast - compaction.completed for an unknown or completed compaction', () => {
  const done = (s: S) => s.ev('ses_1', 'compaction.completed', { executionId: 'exe_1', messageId: 'msg_c', summary: 's' });
  refuses(
    () => [],
    (s) => [done(s)],
    ErrorCode.InconsistentStream,
    'compaction.completed for message msg_c, which does not exist in session ses_1',
  );
  refuses(
    (s) => [s.ev('ses_1', 'compaction.started', { executionId: 'exe_1', messageId: 'msg_c', reason: 'r' }), done(s)],
    (s) => [done(s)],
    ErrorCode.InconsistentStream,
    'compaction.completed for message msg_c, which is already completed: a compaction completes once.',
  );
});

test('fail fast - execution events for an execution without a live row, and a claim reusing an execution id', () => {
  const end = (s: S) => s.ev('ses_1', 'execution.settled', { executionId: 'exe_1', outcome: 'succeeded' });
  const afterEnd = {
    'execution.renewed': (s: S) => s.ev('ses_1', 'execution.renewed', { executionId: 'exe_1', expiresAt: 1 }),
    'execution.phase': (s: S) => s.ev('ses_1', 'execution.phase', { executionId: 'exe_1', phase: 'unknown' }),
    'execution.started': (s: S) => s.ev('ses_1', 'execution.started', { executionId: 'exe_1' }),
    'execution.settled': end,
    'execution.cancelled': (s: S) => s.ev('ses_1', 'execution.cancelled', { executionId: 'exe_1' }),
    'recovery.started': (s: S) => s.ev('ses_1', 'recovery.started', { executionId: 'exe_1' }),
    'recovery.completed': (s: S) =>
      s.ev('ses_1', 'recovery.completed', { executionId: 'exe_1', assistantMessageId: null, continuationInputId: null, phase: 'safe' }),
    'step.started': (s: S) => s.ev('ses_1', 'step.started', { executionId: 'exe_1', messageId: 'msg_1', step: 0 }),
  };
  for (const [type, write] of Object.entries(afterEnd)) {
    refuses(
      (s) => [end(s)],
      (s) => [write(s)],
      ErrorCode.InconsistentStream,
      `${type} for execution exe_1, which has no live row in session ses_1: it was never claimed, or was already settled, cancelled or recovered.`,
    );
  }
  refuses(
    () => [],
    (s) => [s.ev('ses_2', 'execution.renewed', { executionId: 'exe_1', expiresAt: 1 })],
    ErrorCode.InconsistentStream,
    'its row belongs to session ses_1',
  );
  refuses(
    () => [],
    (s) => [s.ev('ses_2', 'execution.claimed', { executionId: 'exe_1', ownerId: 'own_b', expiresAt: 1, leaseMs: 1, assistantSeq: -1 })],
    ErrorCode.InconsistentStream,
    'execution.claimed for execution exe_1, which already has a row (session ses_1, owner own_a)',
  );
});

test('fail fast - recovery wakes need a recovery row; an execution is recovered once', () => {
  const wakes = [
    (s: S) => s.ev('ses_1', 'recovery.wake_requested', { executionId: 'exe_1', attempt: 1 }),
    (s: S) => s.ev('ses_1', 'recovery.wake_delivered', { executionId: 'exe_1', byExecutionId: 'exe_2' }),
    (s: S) => s.ev('ses_1', 'recovery.wake_failed', { executionId: 'exe_1', attempt: 1, error: { type: 'x', message: 'y' }, parked: false }),
  ];
  const noContinuation = (s: S) => [
    s.ev('ses_1', 'recovery.started', { executionId: 'exe_1' }),
    s.ev('ses_1', 'recovery.completed', { executionId: 'exe_1', assistantMessageId: null, continuationInputId: null, phase: 'safe' }),
  ];
  for (const wake of wakes) {
    refuses(
      noContinuation,
      (s) => [wake(s)],
      ErrorCode.InconsistentStream,
      `${wake(stream()).type} for execution exe_1, which has no recovery row in session ses_1: a wake is owed only after a recovery.completed that admitted a continuation.`,
    );
  }
});

test('fail fast - malformed events: invalid payload, unknown type, unsupported version', () => {
  const bad = (s: S, patch: Record<string, unknown>) =>
    ({ ...s.ev('ses_1', 'execution.renewed', { executionId: 'exe_1', expiresAt: 5 }), ...patch }) as SessionEvent;
  refuses(
    () => [],
    (s) => [bad(s, { payload: { executionId: 'exe_1', expiresAt: 'soon' } })],
    ErrorCode.InvalidPayload,
    'Event execution.renewed has an invalid payload',
  );
  refuses(
    () => [],
    (s) => [bad(s, { type: 'execution.exploded' })],
    ErrorCode.UnknownEventType,
    'Unknown event type "execution.exploded"',
  );
  refuses(
    () => [],
    (s) => [bad(s, { version: 7 })],
    ErrorCode.UnsupportedEventVersion,
    'has version 7',
  );
  refuses(
    () => [],
    (s) => [bad(s, { seq: 0 })],
    ErrorCode.InvalidPayload,
    'The event has an invalid seq 0',
  );
});

test('fail fast - the error names the event: id, type, session, seq, position', () => {
  const err = refuses(
    () => [],
    (s) => [s.ev('ses_1', 'step.ended', { ...m1, finish: 'stop' })],
    ErrorCode.InconsistentStream,
    '[event evt_5 (step.ended, session ses_1, seq 5, position 5)]',
  );
  assert.instance(err, ProjectionError);
  const e = err as ProjectionError;
  assert.equal([e.eventId, e.eventType, e.sessionId, e.seq, e.position], ['evt_5', 'step.ended', 'ses_1', 5, 5]);
  assert.match(e.message, 'Projector "main" rolled back the whole batch: nothing of it was applied and its checkpoint stays at 4.');
  assert.equal(e.details.checkpoint, 4);
});

test.run();
