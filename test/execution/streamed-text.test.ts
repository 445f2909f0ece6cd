/**
 * Streamed text is recorded at the durability boundary: what a runner streams (`ctx.delta`) goes
 * out live at once and reaches the log (`text.streamed`) with the turn's next durable write, or
 * `STREAM_RECORD_MS` after it streamed at the latest. So a turn whose owner dies keeps its answer
 * up to a bounded point: recovery seals it as the step's partial text, live subscribers are told
 * what to keep (`turn.interrupted`), and the continuation goes on from it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock } from '../../src/clock.ts';
import { LocalLiveBus, type LiveEvent } from '../../src/events/live-bus.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import type { Notice } from '../../src/execution/session-execution.ts';
import { STREAM_RECORD_MS } from '../../src/execution/stream-recorder.ts';
import { RecoverySweeper, type RecoveryNotice } from '../../src/recovery/sweeper.ts';
import { assistantText, type TranscriptItem } from '../../src/events/transcript.ts';
import type { Runner } from '../../src/runner/types.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { Projector } from '../../src/projector/projector.ts';
import { sessionRows } from '../../src/projector/queries.ts';
import { parseMessage } from '../../src/projector/message-rows.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { fixture, gatedRunner } from '../support/fixture.ts';

const streamed = (events: SessionEvent[]) =>
  events.filter((e): e is SessionEvent<'text.streamed'> => e.type === 'text.streamed').map((e) => [e.payload.text, e.payload.restart]);
const answer = (items: readonly TranscriptItem[]) =>
  items.filter((i): i is Extract<TranscriptItem, { type: 'assistant' }> => i.type === 'assistant').map((a) => [a.status, assistantText(a)]);

/** A service whose one turn the test drives by hand, its live events and notices kept. */
async function drive(fx: ReturnType<typeof fixture>, sessionId: string, clock = new ManualClock(0)) {
  const gate = gatedRunner({ observeAbort: true });
  const live: LiveEvent[] = [];
  const notices: Notice[] = [];
  const bus = new LocalLiveBus();
  bus.subscribe((e) => live.push(e));
  const svc = fx.service({ runner: gate.runner, clock, bus, ownerId: 'own_a', onNotice: (n) => notices.push(n) });
  await fx.admit(svc, sessionId, { id: 'inp_1', prompt: 'tell me a story', wake: false });
  void svc.resume(sessionId);
  await gate.started(1);
  const ctx = gate.runs[0]!.ctx;
  const { messageId } = await ctx.startStep();
  await ctx.phase('unknown'); // the model request goes out
  return { svc, gate, ctx, messageId, clock, live, notices };
}

test('streamed text - recorded STREAM_RECORD_MS after it streamed, not per delta; the completed text replaces it', async () => {
  const fx = fixture();
  const { svc, gate, ctx, messageId, clock } = await drive(fx, 'ses_rec');
  ctx.delta(messageId, 'prt_a', 'Once ');
  ctx.delta(messageId, 'prt_a', 'upon ');
  await clock.advance(STREAM_RECORD_MS - 1);
  assert.equal(streamed(await fx.events('ses_rec')), [], 'nothing recorded before the interval');
  await clock.advance(1);
  await waitFor(async () => streamed(await fx.events('ses_rec')).length === 1, { what: 'the first record' });
  ctx.delta(messageId, 'prt_a', 'a time');
  await clock.advance(STREAM_RECORD_MS);
  await waitFor(async () => streamed(await fx.events('ses_rec')).length === 2, { what: 'the second record' });
  assert.equal(streamed(await fx.events('ses_rec')), [
    ['Once upon ', true],
    ['a time', false],
  ]);
  assert.equal(answer(await ctx.history()), [['running', 'Once upon a time']], 'the transcript has the text as it streamed');
  await ctx.text(messageId, 'Once upon a time.', 'prt_a');
  await ctx.endStep(messageId);
  gate.runs[0]!.release();
  await svc.awaitIdle('ses_rec');
  await clock.advance(2 * STREAM_RECORD_MS);
  const events = await fx.events('ses_rec');
  assert.is(streamed(events).length, 2, 'nothing recorded after the text completed');
  assert.equal(answer((await ctx.history()) as TranscriptItem[]), [['completed', 'Once upon a time.']]);
  // the projection folds it the same way
  const db = openDatabase(':memory:');
  migrate(db);
  new Projector(db).apply(events);
  const rows = sessionRows(db, 'ses_rec').messages.filter((m) => m.type === 'assistant');
  assert.equal(
    rows.map((m) => (parseMessage(m).data as unknown as { parts: { text: string }[] }).parts.map((p) => p.text)),
    [['Once upon a time.']],
  );
  db.close();
  await fx.close();
});

test('streamed text - a durable write takes what streamed with it; text of a message the turn did not start stays live only', async () => {
  const fx = fixture();
  const { ctx, messageId, live } = await drive(fx, 'ses_dur');
  ctx.delta(messageId, 'prt_a', 'Let me look that up.');
  ctx.delta('msg_not_started', 'prt_x', 'stray');
  await ctx.tool(messageId, { name: 'lookup', input: {} }, async () => 'found');
  const events = await fx.events('ses_dur');
  const called = events.findIndex((e) => e.type === 'tool.called');
  assert.equal(streamed(events), [['Let me look that up.', true]], 'recorded with the journal, no timer needed');
  assert.ok(events.findIndex((e) => e.type === 'text.streamed') > called, 'after the writes it followed, in the same append');
  assert.equal(
    live.filter((e) => e.type === 'text.delta').map((e) => (e.payload as { delta: string }).delta),
    ['Let me look that up.', 'stray'],
    'both went out live',
  );
  await fx.close();
});

test('streamed text - a retried request starts the part again (an empty restart record), and the retry is a notice', async () => {
  const fx = fixture();
  const { ctx, messageId, clock, notices } = await drive(fx, 'ses_retry');
  ctx.delta(messageId, 'prt_a', 'Once');
  await clock.advance(STREAM_RECORD_MS);
  await waitFor(async () => streamed(await fx.events('ses_retry')).length === 1, { what: 'the first record' });
  ctx.retrying(messageId, 1, 250, { type: 'model_request', name: 'HTTP 429', message: '429 slow down' });
  await clock.advance(STREAM_RECORD_MS);
  await waitFor(async () => streamed(await fx.events('ses_retry')).length === 2, { what: 'the restart' });
  ctx.delta(messageId, 'prt_a', 'Twice');
  await clock.advance(STREAM_RECORD_MS);
  await waitFor(async () => streamed(await fx.events('ses_retry')).length === 3, { what: 'the text of the retry' });
  assert.equal(streamed(await fx.events('ses_retry')), [
    ['Once', true],
    ['', true],
    ['Twice', false],
  ]);
  assert.equal(answer(await ctx.history()), [['running', 'Twice']]);
  assert.equal(
    notices.filter((n) => n.type === 'model_retry'),
    [
      {
        type: 'model_retry',
        sessionId: 'ses_retry',
        executionId: ctx.executionId,
        attempt: 1,
        delayMs: 250,
        error: { type: 'model_request', name: 'HTTP 429', message: '429 slow down' },
      },
    ],
  );
  await fx.close();
});

test('streamed text - a turn handed back keeps all it streamed, and live subscribers hear it was interrupted with nothing to discard', async () => {
  const fx = fixture();
  const { svc, ctx, messageId, live } = await drive(fx, 'ses_back');
  ctx.delta(messageId, 'prt_a', 'The first ');
  ctx.delta(messageId, 'prt_a', 'half');
  await svc.close(); // SIGTERM: the turn is handed back
  const events = await fx.events('ses_back');
  assert.equal(streamed(events), [['The first half', true]]);
  assert.ok(events.findIndex((e) => e.type === 'text.streamed') < events.findIndex((e) => e.type === 'step.failed'), 'recorded before the step was sealed');
  const told = live.filter((e) => e.type === 'turn.interrupted');
  assert.equal(
    told.map((e) => e.payload),
    [
      {
        executionId: ctx.executionId,
        ownerId: 'own_a',
        reason: 'handed_back',
        messageId,
        recorded: [{ partId: 'prt_a', length: 'The first half'.length }],
        continuationInputId: `inp_handback_${ctx.executionId}`,
      },
    ],
  );
  await fx.close();
});

test('streamed text - an owner that dies mid-answer: the sweep recovers the step with the text recorded, tells live subscribers what to keep, and the continuation sees the partial answer', async () => {
  const fx = fixture();
  const a = await drive(fx, 'ses_dead');
  a.ctx.delta(a.messageId, 'prt_a', 'Once upon');
  await a.clock.advance(STREAM_RECORD_MS);
  await waitFor(async () => streamed(await fx.events('ses_dead')).length === 1, { what: 'the record' });
  a.ctx.delta(a.messageId, 'prt_a', ' a time'); // streamed live, never recorded: the owner dies now
  // another worker, past the dead owner's lease
  const seen: (readonly TranscriptItem[])[] = [];
  const continuing: Runner = async (ctx) => {
    seen.push(await ctx.history());
  };
  const live: LiveEvent[] = [];
  const bus = new LocalLiveBus();
  bus.subscribe((e) => live.push(e));
  const clock = new ManualClock(120_000);
  const b = fx.service({ runner: continuing, clock, bus, ownerId: 'own_b' });
  const notices: RecoveryNotice[] = [];
  const sweeper = new RecoverySweeper({
    execution: b,
    candidates: { expired: () => ['ses_dead'], runnable: () => [], due: () => [] },
    clock,
    onNotice: (n) => notices.push(n),
  });
  await sweeper.sweep();
  const told = live.find((e) => e.type === 'turn.interrupted');
  assert.equal(told?.payload, {
    executionId: a.ctx.executionId,
    ownerId: 'own_a',
    reason: 'lease_expired',
    messageId: a.messageId,
    recorded: [{ partId: 'prt_a', length: 'Once upon'.length }],
    continuationInputId: `inp_cont_${a.ctx.executionId}`,
  });
  const recovered = notices.find((n) => n.type === 'recovered');
  assert.is(recovered?.type === 'recovered' && recovered.partialText, 'Once upon'.length);
  await b.awaitIdle('ses_dead');
  await waitFor(() => seen.length === 1, { what: 'the continuation to run' });
  const items = seen[0]!;
  assert.equal(answer(items), [['recovered', 'Once upon']], 'the step is sealed with its partial text');
  const last = items.at(-1)!;
  assert.is(last.type, 'user');
  assert.is(last.type === 'user' && last.text, 'Continue where the previous answer stopped: it was interrupted because the worker running it stopped.');
  assert.not.match(
    JSON.stringify(items.filter((i) => i.type === 'user').map((i) => (i as { text: string }).text)),
    /exe_|own_|inp_|msg_/,
    'no internal ids in the words',
  );
  await fx.close();
});

test.run();
