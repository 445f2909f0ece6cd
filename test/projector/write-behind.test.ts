/**
 * The projector writes message rows behind (read once per batch, changed in memory, written once
 * before the checkpoint). Whatever the batching, the tables must end exactly as if every event were
 * its own batch: the same log folded in 1-event batches, in one batch and cut anywhere gives the same
 * rows and hash; a message touched by many events in one batch ends as it does event by event; and a
 * batch that throws leaves nothing behind for the next one.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { projectionHash, projectionRows } from '../../src/projector/rebuild.ts';
import type { Db } from '../../src/storage/sqlite/database.ts';
import { ErrorCode } from '../../src/errors.ts';
import { engineLog } from './engine-log.ts';
import { claimedTurn, message, setup } from './support.ts';
import { expectCode, stream } from '../../src/testing/fixtures.ts';

function fold(events: readonly SessionEvent[], cuts: (i: number) => boolean): Db {
  const { db, projector } = setup();
  let batch: SessionEvent[] = [];
  events.forEach((e, i) => {
    batch.push(e);
    if (cuts(i) || i === events.length - 1) {
      projector.apply(batch);
      batch = [];
    }
  });
  return db;
}

/** Two sessions whose messages share ids, every message rule exercised, several events per message. */
function busyStream(): SessionEvent[] {
  const s = stream();
  const out: SessionEvent[] = [];
  for (const [sessionId, exe] of [
    ['ses_1', 'exe_1'],
    ['ses_2', 'exe_2'],
  ] as const) {
    const m = { executionId: exe, messageId: 'msg_1' };
    out.push(
      ...claimedTurn(s, sessionId, exe, 'inp_1'),
      s.ev(sessionId, 'step.started', { ...m, step: 0 }),
      s.ev(sessionId, 'text.completed', { ...m, partId: 'prt_1', text: `draft of ${sessionId}` }),
      s.ev(sessionId, 'text.completed', { ...m, partId: 'prt_2', text: 'second part' }),
      s.ev(sessionId, 'text.completed', { ...m, partId: 'prt_1', text: `final of ${sessionId}` }),
      s.ev(sessionId, 'tool.called', { ...m, callId: 'call_1', name: 'deploy', input: { to: 'prod' }, durable: true, idempotencyKey: 'k1' }),
      s.ev(sessionId, 'tool.called', { ...m, callId: 'call_2', name: 'read', input: [1], durable: false }),
      s.ev(sessionId, 'tool.started', { ...m, callId: 'call_1' }),
      s.ev(sessionId, 'tool.failed', { ...m, callId: 'call_1', error: { type: 'tool', name: 'IOError', message: 'first' } }),
      s.ev(sessionId, 'tool.failed', { ...m, callId: 'call_1', error: { type: 'tool', name: 'IOError', message: 'again' } }),
      s.ev(sessionId, 'tool.started', { ...m, callId: 'call_2' }),
      s.ev(sessionId, 'tool.succeeded', { ...m, callId: 'call_2', output: { big: 2 ** 53 - 1 } }),
      s.ev(sessionId, 'step.started', { ...m, step: 0 }), // a continued step
      s.ev(sessionId, 'step.ended', { ...m, finish: 'stop' }),
      s.ev(sessionId, 'compaction.started', { executionId: exe, messageId: 'cmp_1', reason: 'overflow' }),
      s.ev(sessionId, 'compaction.completed', { executionId: exe, messageId: 'cmp_1', summary: 'short' }),
    );
  }
  return out;
}

test('write-behind - a message touched by many events in one batch ends exactly as event by event (two sessions, same message ids)', () => {
  const events = busyStream();
  const one = fold(events, () => true);
  const batch = fold(events, () => false);
  assert.equal(projectionRows(batch), projectionRows(one));
  assert.is(projectionHash(batch), projectionHash(one));
  const m = message(batch, 'msg_1')!;
  assert.equal(m.data, {
    executionId: 'exe_1',
    step: 0,
    status: 'completed',
    finish: 'stop',
    parts: [
      { id: 'prt_1', type: 'text', text: 'final of ses_1' },
      { id: 'prt_2', type: 'text', text: 'second part' },
    ],
    tools: [
      {
        callId: 'call_1',
        name: 'deploy',
        input: { to: 'prod' },
        durable: true,
        idempotencyKey: 'k1',
        state: 'error',
        error: { type: 'tool', name: 'IOError', message: 'again' },
      },
      { callId: 'call_2', name: 'read', input: [1], durable: false, state: 'completed', output: { big: 2 ** 53 - 1 } },
    ],
  });
  const ended = events.find((e) => e.type === 'step.ended' && e.sessionId === 'ses_1')!;
  assert.is(m.time_updated, ended.time, 'time_updated is the last event that changed it');
  const rows = batch.prepare("SELECT session_id, data FROM session_message WHERE id = 'msg_1' ORDER BY session_id").all() as {
    session_id: string;
    data: string;
  }[];
  assert.equal(
    rows.map((r) => [r.session_id, JSON.parse(r.data).executionId]),
    [
      ['ses_1', 'exe_1'],
      ['ses_2', 'exe_2'],
    ],
  );
});

test('write-behind - the stream cut into two batches at every point gives the rows of 1-event batches', () => {
  const events = busyStream();
  const expected = projectionHash(fold(events, () => true));
  for (let cut = 0; cut < events.length; cut++) {
    assert.is(projectionHash(fold(events, (i) => i === cut)), expected, `cut after event ${cut + 1} (${events[cut]!.type})`);
  }
});

test('write-behind - a real engine log: 1-event batches, 7-event batches and one batch give the same projection hash', async () => {
  const events = await engineLog();
  const types = new Set(events.map((e) => e.type));
  for (const t of ['text.completed', 'tool.failed', 'tool.succeeded', 'compaction.completed', 'step.failed', 'input.promoted'])
    assert.ok(types.has(t as SessionEvent['type']), `the log has ${t}`);
  const one = projectionHash(fold(events, () => true));
  assert.is(projectionHash(fold(events, (i) => i % 7 === 6)), one);
  assert.is(projectionHash(fold(events, () => false)), one);
});

test('write-behind - a batch that throws leaves no cached message behind: the next batch reads the table', () => {
  const s = stream();
  const m = { executionId: 'exe_1', messageId: 'msg_1' };
  const turn = claimedTurn(s, 'ses_1', 'exe_1', 'inp_1');
  const started = s.ev('ses_1', 'step.started', { ...m, step: 0 });
  const leaked = s.ev('ses_1', 'text.completed', { ...m, partId: 'prt_1', text: 'rolled back' });
  const broken = s.ev('ses_1', 'tool.started', { ...m, callId: 'call_never' });
  const { db, projector } = setup();
  expectCode(() => projector.apply([...turn, started, leaked, broken]), ErrorCode.InconsistentStream, 'which was never called');
  const ok = s.ev('ses_1', 'text.completed', { ...m, partId: 'prt_2', text: 'kept' });
  const retry = [...turn, started, ok].map((e, i) => ({ ...e, position: i + 1 }));
  projector.apply(retry);
  const alone = setup();
  alone.projector.apply(retry);
  assert.equal(message(db, 'msg_1')!.data.parts, [{ id: 'prt_2', type: 'text', text: 'kept' }]);
  assert.is(projectionHash(db), projectionHash(alone.db));
});

test.run();
