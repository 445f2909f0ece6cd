/**
 * The conversation view model (src/inspector/conversation.ts), over real event sequences the engine
 * writes: the echo runner, a runner with tools (one succeeds, one fails), the model runner with
 * reasoning and an approval (approved, denied), a compaction, a signal, a recovery after a lost
 * owner, a hand-back, a cancel, a fork. At every sequence the fold is the conversation as it was
 * then, and folding in two pieces equals folding at once. Large text is bounded and says how much
 * was cut; bytes are never inlined.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { ManualClock } from '../../src/clock.ts';
import { openEngine, type Engine } from '../../src/engine.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { openaiRunner } from '../../src/runner/model/openai.ts';
import { defineTool } from '../../src/runner/model/tools.ts';
import type { Runner } from '../../src/runner/types.ts';
import { RecoverySweeper } from '../../src/recovery/sweeper.ts';
import { startFakeOpenAI } from '../../src/testing/fake-openai.ts';
import { waitFor } from '../../src/testing/wait.ts';
import {
  emptyConversation,
  foldConversation,
  isSettled,
  type Conversation,
  type ConversationEntry,
  type PromptEntry,
  type StepEntry,
  type ToolPart,
  type TurnEntry,
} from '../../src/inspector/conversation.ts';
import { TEXT_SHOWN, VALUE_SHOWN } from '../../src/inspector/bounded.ts';
import { count, fixture, gatedRunner } from '../support/fixture.ts';
import { ConversationMarks } from '../../src/inspector/conversation-marks.ts';
import { Projector, sessionRows } from '../../src/projector/index.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { tempDir } from '../support/tmp.ts';
import { startSessiond } from '../../src/host.ts';

const tmp = tempDir();
test.after(() => tmp.remove());

const fold = (sessionId: string, events: readonly SessionEvent[], upTo = Number.MAX_SAFE_INTEGER): Conversation =>
  foldConversation(
    emptyConversation(sessionId),
    events.filter((e) => e.seq <= upTo),
  );
const kinds = (c: Conversation) => c.entries.map((e) => e.kind);
const of = <K extends ConversationEntry['kind']>(c: Conversation, kind: K) =>
  c.entries.filter((e): e is Extract<ConversationEntry, { kind: K }> => e.kind === kind);
const tools = (c: Conversation): ToolPart[] => of(c, 'step').flatMap((s) => s.parts.filter((p): p is ToolPart => p.type === 'tool'));
const seqOf = (events: readonly SessionEvent[], type: string, nth = 0) => events.filter((e) => e.type === type)[nth]!.seq;

/** Folding at every split point equals folding at once, also folding on twice from one point; the fold never changes the conversation it was given. */
function assertIncremental(sessionId: string, events: readonly SessionEvent[]): void {
  const whole = fold(sessionId, events);
  for (let i = 0; i <= events.length; i++) {
    const head = fold(sessionId, events.slice(0, i));
    const frozen = JSON.stringify(head);
    assert.equal(foldConversation(head, events.slice(i)), whole, `folded at ${i}, then the rest`);
    // again from the same point (as time travel back to a kept fold does): the same
    assert.equal(foldConversation(head, events.slice(i, i + 3)), fold(sessionId, events.slice(0, i + 3)), `folded at ${i}, then 3 more`);
    assert.is(JSON.stringify(head), frozen, `the fold at ${i} was not changed by folding on from it`);
  }
  marked += assertMarks(sessionId, events);
}

/** Marks checked over every fixture (the last test asserts there were some). */
let marked = 0;

/**
 * The marks of the log (conversation-marks.ts, one wherever the session settled): the entries before
 * a mark are final (the whole fold has them unchanged), a fold from the mark continues to the whole
 * fold, and the rows the mark counts are those the projector made by then.
 */
function assertMarks(sessionId: string, events: readonly SessionEvent[]): number {
  const marks = new ConversationMarks(1);
  for (let i = 0; i < events.length; i += 5) marks.add(events.slice(i, i + 5));
  const whole = fold(sessionId, events);
  const db = openDatabase(':memory:');
  migrate(db);
  const projector = new Projector(db, { name: 'truth' });
  let projected = 0;
  for (const m of marks.marksOf(sessionId)) {
    const at = fold(sessionId, events, m.seq);
    assert.ok(isSettled(at), `settled at ${m.seq}`);
    assert.is(at.entries.length, m.first, `the mark at ${m.seq} counts its entries`);
    assert.equal(whole.entries.slice(0, m.first), at.entries, `the entries before the mark at ${m.seq} never change after it`);
    const tail = foldConversation(
      { ...emptyConversation(sessionId), seq: m.seq, eventId: m.eventId, time: m.time, first: m.first },
      events.filter((e) => e.seq > m.seq),
    );
    assert.equal([...at.entries, ...tail.entries], [...whole.entries], `from the mark at ${m.seq}, the whole conversation`);
    assert.equal(tail.queued, whole.queued);
    projector.apply(events.slice(projected, m.seq).map((e) => ({ ...e, position: e.seq })));
    projected = m.seq;
    const rows = sessionRows(db, sessionId);
    assert.equal(m.rows, { inputs: rows.inputs.length, messages: rows.messages.length, recoveries: rows.recoveries.length }, `rows at the mark at ${m.seq}`);
    assert.is(rows.executions.length, 0, `no turn runs at the mark at ${m.seq}`);
  }
  db.close();
  return marks.marksOf(sessionId).length;
}

async function engineWith(name: string, runner: Runner, more: Partial<Parameters<typeof openEngine>[0]> = {}): Promise<Engine> {
  return openEngine({ file: tmp.file(`${name}.db`), runner, ...more });
}

test('conversation - echo runner: the prompt, the turn and its steps with their text; at each sequence as it was then', async () => {
  const engine = await engineWith('echo', echoRunner({ steps: 3 }));
  try {
    await engine.admit('ses_echo', { prompt: 'hello there, general kenobi' });
    await engine.awaitIdle('ses_echo');
    await engine.admit('ses_echo', { prompt: 'later, when woken', wake: false });
    const events = await engine.log.readSession('ses_echo');
    const c = fold('ses_echo', events);
    assert.equal(kinds(c), ['turn', 'prompt', 'step', 'step', 'step']);
    const prompt = c.entries[1] as PromptEntry;
    assert.equal([prompt.state, prompt.text.text, prompt.text.cut, prompt.source, prompt.parts], ['in_turn', 'hello there, general kenobi', 0, 'user', null]);
    const steps = of(c, 'step');
    assert.equal(
      steps.map((s) => [s.status, s.finish, s.parts.map((p) => (p.type === 'text' ? p.text.text : p.type))]),
      [
        ['completed', 'continue', ['echo: hello']],
        ['completed', 'continue', ['echo: there, general']],
        ['completed', 'stop', ['echo: kenobi']],
      ],
    );
    const turn = c.entries[0] as TurnEntry;
    assert.equal([turn.outcome, turn.ownerId, turn.executionId === steps[0]!.executionId], ['succeeded', engine.ownerId, true]);
    assert.ok(turn.durationMs !== null && turn.durationMs >= 0, 'the turn says how long it ran');
    assert.equal(
      c.queued.map((q) => [q.state, q.text.text]),
      [['queued', 'later, when woken']],
      'a prompt admitted and not yet in a turn is queued, apart',
    );

    // time travel: the conversation as it was at the first step's start, then at its text
    const started = seqOf(events, 'step.started');
    const atStart = fold('ses_echo', events, started);
    assert.equal(kinds(atStart), ['turn', 'prompt', 'step']);
    assert.equal(
      [(atStart.entries[0] as TurnEntry).outcome, (atStart.entries[2] as StepEntry).status, (atStart.entries[2] as StepEntry).parts],
      [null, 'running', []],
    );
    assert.is(atStart.entries[2]!.changedSeq, started, 'the entry the event at this sequence changed');
    const beforeClaim = fold('ses_echo', events, seqOf(events, 'execution.claimed') - 1);
    assert.equal([kinds(beforeClaim), beforeClaim.queued.map((q) => q.inputId)], [[], [prompt.inputId]], 'before its turn, the prompt is queued');
    assertIncremental('ses_echo', events);
  } finally {
    await engine.close();
  }
});

test('conversation - a runner with tools: input, output, durations; a failed call with its error; a steered prompt', async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const runner: Runner = async (ctx) => {
    const { messageId } = await ctx.startStep();
    await ctx.phase('unknown');
    const weather = await ctx.tool(messageId, { name: 'weather', input: { city: 'Oslo' }, durable: true }, async () => ({ city: 'Oslo', tempC: 3 }));
    await ctx
      .tool(messageId, { name: 'book_flight', input: { to: 'Bergen' } }, async () => {
        throw new Error('no seats left');
      })
      .catch(() => {});
    await ctx.text(messageId, `It is ${weather.tempC} °C in ${weather.city}.`);
    await ctx.endStep(messageId, 'tool-calls');
    await ctx.flush(); // durable now, so the test sees the step ended
    await gate;
    const next = await ctx.startStep(); // the steered prompt joins here
    await ctx.text(next.messageId, `and: ${next.steered.map((s) => s.prompt).join(', ')}`);
    await ctx.endStep(next.messageId);
  };
  const engine = await engineWith('tools', runner);
  try {
    await engine.admit('ses_tools', { prompt: 'what should I wear?' });
    await waitFor(async () => (await engine.log.readSession('ses_tools')).some((e) => e.type === 'step.ended'), { what: 'the first step' });
    await engine.admit('ses_tools', { prompt: 'and an umbrella?', delivery: 'steer' });
    const steeredAdmitted = await engine.log.lastSeq('ses_tools');
    release();
    await engine.awaitIdle('ses_tools');
    const events = await engine.log.readSession('ses_tools');
    const c = fold('ses_tools', events);
    const [weather, flight] = tools(c);
    assert.equal(
      [weather!.name, weather!.input?.text, weather!.state, weather!.output?.text, weather!.durable, weather!.idempotencyKey?.startsWith('ses_tools:exe_')],
      ['weather', '{"city":"Oslo"}', 'succeeded', '{"city":"Oslo","tempC":3}', true, true],
    );
    assert.ok(weather!.durationMs !== null && weather!.durationMs >= 0 && weather!.endedSeq === seqOf(events, 'tool.succeeded'));
    assert.equal(
      [flight!.name, flight!.state, flight!.error?.message.text, flight!.output, flight!.durable],
      ['book_flight', 'failed', 'no seats left', null, false],
    );
    assert.equal(
      of(c, 'step')[0]!.parts.map((p) => p.type),
      ['tool', 'tool', 'text'],
    );
    // the steered prompt: queued when admitted, in the turn at the next step
    const atSteer = fold('ses_tools', events, steeredAdmitted);
    assert.equal(
      atSteer.queued.map((q) => [q.delivery, q.text.text]),
      [['steer', 'and an umbrella?']],
    );
    assert.equal(kinds(c), ['turn', 'prompt', 'step', 'prompt', 'step']);
    assert.equal((c.entries[3] as PromptEntry).text.text, 'and an umbrella?');
    assert.equal(c.queued, []);
    assertIncremental('ses_tools', events);
  } finally {
    await engine.close();
  }
});

test('conversation - the model runner: reasoning, an approval waited for and approved (the call ran in the resumed turn), one denied', async () => {
  const model = await startFakeOpenAI({ apiKey: 'sk-test' });
  model.script(
    { kind: 'toolCalls', calls: [{ id: 'call_mail', name: 'send_mail', arguments: { to: 'bob@example.com' } }] },
    { kind: 'text', reasoning: 'the mail went out', text: 'Done: the mail to Bob is sent.' },
    { kind: 'toolCalls', calls: [{ id: 'call_wipe', name: 'send_mail', arguments: { to: 'everyone@example.com' } }] },
    { kind: 'text', text: 'Understood, I will not send it.' },
  );
  const send_mail = defineTool({
    description: 'Send an email',
    inputSchema: z.object({ to: z.string() }),
    durable: true,
    needsApproval: true,
    execute: async ({ to }) => `sent to ${to}`,
  });
  const engine = await engineWith('approval', openaiRunner({ model: 'm', baseURL: model.url, apiKey: 'sk-test', tools: { send_mail } }));
  try {
    await engine.admit('ses_mail', { prompt: 'Mail Bob that the build is green' });
    await engine.awaitIdle('ses_mail');
    const waiting = fold('ses_mail', await engine.log.readSession('ses_mail'));
    const asked = tools(waiting)[0]!;
    assert.equal(
      [asked.name, asked.state, asked.input?.text, asked.approval?.outcome, asked.startedAt],
      ['send_mail', 'awaiting_approval', '{"to":"bob@example.com"}', null, null],
    );
    const firstTurn = waiting.entries[0] as TurnEntry;
    assert.equal([firstTurn.outcome, firstTurn.waitingFor], ['waiting', [{ kind: 'approval', name: 'call_mail', tool: 'send_mail' }]]);

    await engine.approve('ses_mail', 'call_mail', { reason: 'looks right', actor: 'alice' });
    await engine.awaitIdle('ses_mail');
    await engine.admit('ses_mail', { prompt: 'Now mail everyone' });
    await engine.awaitIdle('ses_mail');
    await engine.deny('ses_mail', 'call_wipe', { reason: 'not today' });
    await engine.awaitIdle('ses_mail');
    const events = await engine.log.readSession('ses_mail');
    const c = fold('ses_mail', events);
    const [mail, wipe] = tools(c);
    assert.equal(
      [mail!.state, mail!.output?.text, mail!.approval?.outcome, mail!.approval?.reason, mail!.approval?.actor],
      ['succeeded', '"sent to bob@example.com"', 'approved', 'looks right', 'alice'],
    );
    assert.ok(mail!.approval!.waitedMs! >= 0 && mail!.approval!.resolvedSeq === seqOf(events, 'wait.resolved'));
    const turns = of(c, 'turn');
    assert.is(mail!.ranIn, turns[1]!.executionId, 'the approved call ran in the execution that resumed the turn');
    assert.equal([wipe!.state, wipe!.approval?.outcome, wipe!.approval?.reason, wipe!.startedAt, wipe!.output], ['denied', 'denied', 'not today', null, null]);
    const continuations = of(c, 'prompt').filter((p) => p.source === 'recovery');
    assert.equal(
      continuations.map((p) => [p.continues?.reason, p.continues?.executionId]),
      [
        ['resumed', turns[0]!.executionId],
        ['resumed', turns[2]!.executionId],
      ],
    );
    const answer = of(c, 'step').find((s) => s.parts.some((p) => p.type === 'reasoning'))!;
    assert.equal(
      answer.parts.map((p) => (p.type === 'tool' ? p.type : [p.type, p.text.text])),
      [
        ['reasoning', 'the mail went out'],
        ['text', 'Done: the mail to Bob is sent.'],
      ],
    );
    assert.equal(answer.usage !== null && answer.usage.outputTokens > 0, true, 'the step says the tokens it used');
    assert.equal(
      turns.map((t) => t.outcome),
      ['waiting', 'succeeded', 'waiting', 'succeeded'],
    );
    // while it waited: at the approval's sequence the call awaits, nothing after it is there yet
    const atWait = fold('ses_mail', events, seqOf(events, 'wait.started'));
    assert.equal([tools(atWait)[0]!.state, tools(atWait)[0]!.approval?.sinceSeq], ['awaiting_approval', seqOf(events, 'wait.started')]);
    assertIncremental('ses_mail', events);
  } finally {
    await engine.close();
    await model.close();
  }
});

test('conversation - a compaction is an entry, the history before it stays; a signal waited for and delivered', async () => {
  let resumed = 0;
  const runner: Runner = async (ctx) => {
    const { messageId } = await ctx.startStep();
    const got = await ctx.waitFor<{ pick: string }>('answer');
    resumed++;
    await ctx.text(messageId, `you picked ${got.outcome === 'delivered' ? got.data.pick : 'nothing'}`);
    await ctx.endStep(messageId);
  };
  const compacting = await engineWith('compact', echoRunner({ steps: 2, overflowAtStep: 1 }));
  const signalling = await engineWith('signal', runner);
  try {
    await compacting.admit('ses_compact', { prompt: 'one two three four' });
    await compacting.awaitIdle('ses_compact');
    const events = await compacting.log.readSession('ses_compact');
    const c = fold('ses_compact', events);
    assert.equal(kinds(c), ['turn', 'prompt', 'step', 'compaction', 'step']);
    const compaction = of(c, 'compaction')[0]!;
    assert.equal(
      [compaction.reason, compaction.summary?.text, compaction.endedSeq],
      ['context overflow', 'summary of 18 characters', seqOf(events, 'compaction.completed')],
    );
    const atStart = of(fold('ses_compact', events, seqOf(events, 'compaction.started')), 'compaction')[0]!;
    assert.equal([atStart.summary, atStart.endedSeq], [null, null], 'while it runs, no summary yet');
    assertIncremental('ses_compact', events);

    await signalling.admit('ses_signal', { prompt: 'pick a colour' });
    await signalling.awaitIdle('ses_signal');
    await signalling.resolve('ses_signal', 'answer', { data: { pick: 'blue' } });
    await signalling.awaitIdle('ses_signal');
    assert.is(resumed, 1);
    const sig = await signalling.log.readSession('ses_signal');
    const s = fold('ses_signal', sig);
    const wait = of(s, 'wait')[0]!;
    assert.equal([wait.waitKind, wait.name, wait.outcome, wait.data?.text], ['signal', 'answer', 'delivered', '{"pick":"blue"}']);
    const atWait = of(fold('ses_signal', sig, seqOf(sig, 'wait.started')), 'wait')[0]!;
    assert.equal([atWait.outcome, atWait.resolvedSeq], [null, null]);
    assert.ok(
      of(s, 'step').some((st) => st.parts.some((p) => p.type === 'text' && p.text.text === 'you picked blue')),
      'the resumed turn answered',
    );
    assertIncremental('ses_signal', sig);
  } finally {
    await compacting.close();
    await signalling.close();
  }
});

test('conversation - a recovery after the owner was lost: the step recovered, the calls interrupted, the turn interrupted, the continuation and its wake', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  try {
    const a = fx.service({ runner: gate.runner, clock: new ManualClock(0), ownerId: 'own_a' });
    await fx.admit(a, 'ses_rec', { prompt: 'the original prompt', wake: false });
    await a.resume('ses_rec');
    await gate.started(1);
    const ctx = gate.runs[0]!.ctx;
    const { messageId } = await ctx.startStep();
    await ctx.text(messageId, 'half an ans');
    void ctx.tool(messageId, { name: 'charge_card', input: { cents: 100 }, durable: true }, () => new Promise(() => {})).catch(() => {});
    await waitFor(async () => count(await fx.events('ses_rec'), 'tool.called') === 1, { what: 'the tool to start' });
    const clock = new ManualClock(30_000);
    const b = fx.service({ runner: gate.runner, clock, ownerId: 'own_b' });
    const all = () => ['ses_rec'];
    await new RecoverySweeper({ execution: b, candidates: { expired: all, runnable: all, due: all }, clock }).sweep();
    await gate.started(2);
    gate.runs[1]!.release();
    await b.awaitIdle('ses_rec');
    const events = await fx.events('ses_rec');
    const c = fold('ses_rec', events);
    assert.equal(kinds(c), ['turn', 'prompt', 'step', 'recovery', 'turn', 'prompt']);
    const [lost, next] = of(c, 'turn');
    assert.equal([lost!.ownerId, lost!.outcome, lost!.endedSeq], ['own_a', 'interrupted', seqOf(events, 'recovery.completed')]);
    assert.equal([next!.ownerId, next!.outcome], ['own_b', 'succeeded']);
    const step = of(c, 'step')[0]!;
    assert.equal([step.status, step.recoveredReason !== null], ['recovered', true]);
    assert.equal(
      step.parts.map((p) => (p.type === 'tool' ? [p.name, p.state, p.error?.type] : [p.type, p.text.text])),
      [
        ['text', 'half an ans'],
        ['charge_card', 'failed', 'interrupted'],
      ],
    );
    const recovery = of(c, 'recovery')[0]!;
    assert.equal([recovery.executionId, recovery.phase, recovery.wakeDeliveredSeq], [lost!.executionId, 'unknown', seqOf(events, 'recovery.wake_delivered')]);
    const continuation = of(c, 'prompt')[1]!;
    assert.equal(
      [continuation.inputId, continuation.source, continuation.continues?.reason, continuation.continues?.retryTools],
      [recovery.continuationInputId, 'recovery', 'interrupted', ['charge_card']],
    );
    // during the recovery: the recovery entry is open, the turn not yet marked
    const during = fold('ses_rec', events, seqOf(events, 'recovery.started'));
    assert.equal([of(during, 'recovery')[0]!.completedSeq, of(during, 'turn')[0]!.outcome], [null, null]);
    assertIncremental('ses_rec', events);
  } finally {
    for (const run of gate.runs) run.release(); // the runners end, so their services can close (also after a failed assertion)
    await fx.close();
  }
});

test('conversation - a turn handed back by a worker shutting down, a cancelled turn, a prompt dropped unrun', async () => {
  const first = await engineWith('handback', echoRunner({ steps: 2, delayMs: 60_000 }));
  let streamed = 0;
  first.subscribe({ sessionId: 'ses_hb', type: 'text.delta' }, () => streamed++);
  await first.admit('ses_hb', { prompt: 'a long turn' });
  await waitFor(() => streamed > 0, { what: 'the turn to stream' });
  await first.close();
  const second = await engineWith('handback', echoRunner({ steps: 1, delayMs: 60_000 }));
  try {
    await second.wake('ses_hb'); // the continuation the hand-back admitted (a worker's start-up scan would wake it)
    await waitFor(async () => (await second.log.readSession('ses_hb')).filter((e) => e.type === 'execution.claimed').length === 2, {
      what: 'the continuation to be claimed',
    });
    await second.admit('ses_hb', { prompt: 'never run', wake: false });
    await second.dropPending('ses_hb', { reason: 'changed my mind', actor: 'ops' });
    await second.cancel('ses_hb', 'enough', undefined, { actor: 'bob' });
    await second.awaitIdle('ses_hb');
    const events = await second.log.readSession('ses_hb');
    const c = fold('ses_hb', events);
    // what the handed-back step had streamed was recorded (text.streamed), and shows as its partial text;
    // the echo runner's sleep ends at the abort and it calls ctx.text on a stopped turn: that text is
    // refused, and what streamed must not be dropped with it (it was, before the run context kept it)
    assert.ok(
      events.some((e) => e.type === 'text.streamed'),
      'the streamed text is in the log',
    );
    const cut = of(c, 'step')[0]!;
    assert.is(cut.status, 'failed'); // sealed by the hand-back
    assert.equal(
      cut.parts.map((p) => (p.type === 'tool' ? p.type : [p.type, p.text.text, p.partial ?? false])),
      [['text', 'a long', true]],
    );
    const turns = of(c, 'turn');
    assert.equal(
      turns.map((t) => [t.outcome, t.cancelReason, t.cancelledBy]),
      [
        ['handed_back', null, undefined],
        ['cancelled', 'enough', 'bob'],
      ],
    );
    assert.equal(
      of(c, 'prompt').map((p) => [p.state, p.source, p.continues?.reason ?? null, p.droppedReason, p.droppedBy]),
      [
        ['in_turn', 'user', null, null, undefined],
        ['in_turn', 'recovery', 'handed_back', null, undefined],
        ['dropped', 'user', null, 'changed my mind', 'ops'],
      ],
    );
    assertIncremental('ses_hb', events);
  } finally {
    await second.close();
  }
});

test('conversation - large text says how much was cut; bytes are never inlined (prompt parts, data URLs, base64 in a tool output)', async () => {
  const png = Buffer.alloc(3000, 7).toString('base64');
  const long = 'x'.repeat(TEXT_SHOWN + 1234);
  const runner: Runner = async (ctx) => {
    const { messageId } = await ctx.startStep();
    await ctx.tool(messageId, { name: 'screenshot', input: { rows: Array.from({ length: 300 }, (_, i) => i) } }, async () => ({ image: png, note: 'ok' }));
    await ctx.text(messageId, long);
    await ctx.endStep(messageId);
  };
  const engine = await engineWith('bounded', runner);
  try {
    await engine.admit('ses_big', {
      prompt: [
        { type: 'text', text: long },
        { type: 'image', data: png, mediaType: 'image/png' },
        { type: 'image', url: `data:image/png;base64,${png}` },
        { type: 'file', url: 'https://203.0.113.1/report.pdf', mediaType: 'application/pdf', filename: 'report.pdf' },
        { type: 'json', value: { quarter: 'Q3' } },
      ],
    });
    await engine.awaitIdle('ses_big');
    const c = fold('ses_big', await engine.log.readSession('ses_big'));
    const all = JSON.stringify(c);
    assert.not.ok(all.includes(png.slice(0, 100)), 'no base64 bytes anywhere in the view');
    const prompt = of(c, 'prompt')[0]!;
    assert.equal(prompt.parts, [
      { type: 'text', text: { text: 'x'.repeat(TEXT_SHOWN), length: TEXT_SHOWN + 1234, cut: 1234 } },
      { type: 'image', mediaType: 'image/png', bytes: 3000 },
      { type: 'image', mediaType: 'image/png', bytes: 3000 },
      { type: 'file', mediaType: 'application/pdf', filename: 'report.pdf', url: { text: 'https://203.0.113.1/report.pdf', length: 30, cut: 0 } },
      { type: 'json', value: { text: '{"quarter":"Q3"}', length: 16, cut: 0 } },
    ]);
    const step = of(c, 'step')[0]!;
    const [shot, text] = step.parts;
    if (shot?.type !== 'tool' || text?.type !== 'text') throw new Error(`a tool call, then text: ${JSON.stringify(step.parts)}`);
    assert.is(shot.output?.text, '{"image":"[base64, 3000 bytes not shown]","note":"ok"}');
    assert.equal(
      [shot.input!.text.length, shot.input!.cut > 0, shot.input!.length],
      [VALUE_SHOWN, true, JSON.stringify({ rows: Array.from({ length: 300 }, (_, i) => i) }).length],
    );
    assert.equal([text.text.text.length, text.text.cut, text.text.length], [TEXT_SHOWN, 1234, TEXT_SHOWN + 1234]);
  } finally {
    await engine.close();
  }
});

test('conversation - a fork starts with the source conversation up to the fork point, then says where it came from', async () => {
  const engine = await engineWith('fork', echoRunner({ steps: 1 }));
  try {
    await engine.admit('ses_src', { prompt: 'first question' });
    await engine.awaitIdle('ses_src');
    const at = await engine.log.lastSeq('ses_src');
    await engine.admit('ses_src', { prompt: 'second question' });
    await engine.awaitIdle('ses_src');
    await engine.fork('ses_src', 'ses_copy', { at });
    await engine.admit('ses_copy', { prompt: 'another path' });
    await engine.awaitIdle('ses_copy');
    const c = fold('ses_copy', await engine.log.readSession('ses_copy'));
    assert.equal(kinds(c), ['prompt', 'step', 'fork', 'turn', 'prompt', 'step']);
    assert.equal(
      c.entries.slice(0, 2).map((e) => e.forked),
      [true, true],
    );
    assert.equal((c.entries[0] as PromptEntry).text.text, 'first question');
    assert.equal(
      (c.entries[1] as StepEntry).parts.map((p) => p.type === 'text' && p.text.text),
      ['echo: first question'],
    );
    const fork = of(c, 'fork')[0]!;
    assert.equal([fork.from, fork.items], [{ sessionId: 'ses_src', seq: at }, 2]);
    assert.equal((c.entries[4] as PromptEntry).text.text, 'another path');
  } finally {
    await engine.close();
  }
});

test('conversation - the fixtures above settled now and then: their marks were checked', () => {
  assert.ok(marked >= 7, `${marked} marks`);
});

test('conversation - a session call: the wait names the child; once delivered, its answer and how its turn ended (a failure with its error)', async () => {
  const calls: Runner = async (ctx) => {
    if (ctx.sessionId === 'ses_boss') {
      const [a, b] = await Promise.all([
        ctx.callSession('dig', { sessionId: 'ses_boss-digger', prompt: 'dig' }),
        ctx.callSession('fill', { sessionId: 'ses_boss-filler', prompt: 'fill' }),
      ]);
      const { messageId } = await ctx.startStep();
      await ctx.text(messageId, `${a.outcome} ${b.outcome}`);
      await ctx.endStep(messageId, 'stop');
      return;
    }
    const { messageId } = await ctx.startStep();
    if (ctx.sessionId === 'ses_boss-filler') throw new Error('no sand left');
    await ctx.text(messageId, 'a hole, 2 m deep');
    await ctx.endStep(messageId, 'stop');
  };
  const host = await startSessiond({ db: tmp.file('calls.db'), runner: calls, sweepMs: 50 });
  try {
    await host.admit('ses_boss', { prompt: 'dig and fill' });
    await waitFor(async () => (await host.status('ses_boss')).outcome === 'succeeded', { what: 'the parent answers', timeoutMs: 20_000 });
    const events = await host.engine.log.readSession('ses_boss');
    const waits = of(fold('ses_boss', events), 'wait').sort((x, y) => x.name.localeCompare(y.name));
    assert.equal(
      waits.map((w) => [w.waitKind, w.name, w.child, w.outcome, w.answer?.outcome, w.answer?.text.text, w.answer?.error?.text ?? null]),
      [
        ['session', 'dig', 'ses_boss-digger', 'delivered', 'succeeded', 'a hole, 2 m deep', null],
        ['session', 'fill', 'ses_boss-filler', 'delivered', 'failed', '', 'no sand left'],
      ],
    );
    const atCall = of(fold('ses_boss', events, seqOf(events, 'wait.started', 1)), 'wait');
    assert.equal(
      atCall.map((w) => [w.child !== null, w.outcome, w.answer]),
      [
        [true, null, null],
        [true, null, null],
      ],
      'while the children run: the children named, no answer yet',
    );
    assertIncremental('ses_boss', events);
  } finally {
    await host.close();
  }
});

test.run();
