/**
 * The chat fold (src/gateway/chat-chunks.ts) over real logs: a turn interrupted (its owner frozen
 * past its lease, another worker's sweep recovers it) goes on in its continuation in the same UI
 * message, which ends at the continuation's settle; chunks of other turns never leak in; a dropped
 * prompt and a cancelled turn end the message with an error; a call that waits for approval streams
 * as the SDK's approval parts (ending there for a reader who may approve, else through the resume to
 * the approved output or the denial; a cancel while it waits ends it with an error), also from the model runner with a needsApproval tool against
 * the fake OpenAI server; every chunk passes the AI SDK's schema.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { uiMessageChunkSchema } from 'ai';
import { ManualClock } from '../../src/clock.ts';
import { RecoverySweeper } from '../../src/recovery/sweeper.ts';
import { chatFold, type ChatFoldOptions, type UIChunk } from '../../src/gateway/chat-chunks.ts';
import { startSessiond } from '../../src/host.ts';
import { answerApprovals } from '../../src/gateway/chat.ts';
import type { RunContext } from '../../src/runner/types.ts';
import { tempDir } from '../support/tmp.ts';
import { z } from 'zod';
import { openaiRunner } from '../../src/runner/model/openai.ts';
import { defineTool } from '../../src/runner/model/tools.ts';
import { startFakeOpenAI } from '../../src/testing/fake-openai.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { fixture, gatedRunner } from '../support/fixture.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { dropPending } from '../../src/input/drop.ts';

async function valid(chunks: UIChunk[]): Promise<void> {
  const schema = uiMessageChunkSchema();
  for (const c of chunks) {
    const r = await (schema as unknown as { validate: (v: unknown) => Promise<{ success: boolean; error?: unknown }> }).validate!(c);
    assert.ok(r.success, `${JSON.stringify(c)}: ${String(r.error)}`);
  }
}

const fold = (events: SessionEvent[], inputId: string, openedAtSeq = 0, more: Partial<ChatFoldOptions> = {}) => {
  const f = chatFold({ inputIds: [inputId], messageId: 'msg_1', openedAtSeq, ...more });
  const chunks = events.flatMap((e) => f.feed(e));
  return { chunks, done: f.done };
};

test('an interrupted turn goes on in its continuation: one message, both parts, finished once at the continuation settle', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  const a = fx.service({ runner: gate.runner, clock: new ManualClock(0), ownerId: 'own_a' });
  const { inputId } = await fx.admit(a, 'ses_1', { prompt: 'first', wake: false });
  await a.resume('ses_1');
  await gate.started(1);
  const ctx = gate.runs[0]!.ctx;
  const { messageId } = await ctx.startStep();
  await ctx.text(messageId, 'half an answer');
  await ctx.flush(); // durable: the recovery keeps it as the interrupted part
  // frozen: another worker's sweep takes over after the lease
  const clock = new ManualClock(30_000);
  const b = fx.service({ runner: gate.runner, clock, ownerId: 'own_b' });
  await new RecoverySweeper({ execution: b, candidates: { expired: () => ['ses_1'], runnable: () => ['ses_1'], due: () => ['ses_1'] }, clock }).sweep();
  await gate.started(2);
  const next = gate.runs[1]!.ctx;
  const step = await next.startStep();
  await next.text(step.messageId, 'the rest of it');
  await next.endStep(step.messageId);
  gate.runs[1]!.release();
  await waitFor(async () => (await fx.events('ses_1')).some((e) => e.type === 'execution.settled'), { what: 'the continuation settled' });
  // another prompt's turn after it: not this message's
  await fx.admit(b, 'ses_1', { prompt: 'second', wake: false });
  await b.resume('ses_1');
  await gate.started(3);
  const third = gate.runs[2]!.ctx;
  const s3 = await third.startStep();
  await third.text(s3.messageId, 'not for the first message');
  await third.endStep(s3.messageId);
  gate.runs[2]!.release();
  await waitFor(async () => (await fx.events('ses_1')).filter((e) => e.type === 'execution.settled').length === 2, { what: 'the second turn' });

  const { chunks, done } = fold(await fx.events('ses_1'), inputId);
  assert.ok(done);
  await valid(chunks);
  const texts = chunks.filter((c) => c.type === 'text-delta').map((c) => c.delta);
  assert.equal(texts, ['half an answer', 'the rest of it']);
  assert.equal(
    chunks.filter((c) => c.type === 'start' || c.type === 'finish').map((c) => c.type),
    ['start', 'finish'],
  );
  gate.runs[0]!.release();
  await fx.close();
});

test('a dropped prompt and a cancelled turn end the message with an error', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  const a = fx.service({ runner: gate.runner, clock: new ManualClock(0), ownerId: 'own_a' });
  const dropped = await fx.admit(a, 'ses_d', { prompt: 'never runs', wake: false });
  await dropPending(a.handler, 'ses_d', { inputIds: [dropped.inputId] });
  const d = fold(await fx.events('ses_d'), dropped.inputId);
  assert.ok(d.done);
  assert.equal(
    d.chunks.map((c) => c.type),
    ['error', 'finish'],
  );
  await valid(d.chunks);

  const running = await fx.admit(a, 'ses_c', { prompt: 'cancel me', wake: false });
  await a.resume('ses_c');
  await gate.started(1);
  await a.cancel('ses_c', 'changed my mind');
  gate.runs[0]!.release();
  await waitFor(async () => (await fx.events('ses_c')).some((e) => e.type === 'execution.cancelled'), { what: 'the cancel recorded' });
  const c = fold(await fx.events('ses_c'), running.inputId);
  assert.ok(c.done);
  assert.match(String(c.chunks.find((x) => x.type === 'error')?.errorText), 'changed my mind');
  await valid(c.chunks);
  await fx.close();
});

/** Asks a person before it "sends" (prompts `mail …`); the resumed turn runs the approved call, then says what came of it. */
async function approvalRunner(ctx: RunContext): Promise<void> {
  const first = ctx.inputs[0]!;
  const { messageId } = await ctx.startStep();
  if (first.continues?.reason !== 'resumed') {
    await ctx.text(messageId, 'May I send it?');
    await ctx.requestApproval(messageId, { name: 'send_mail', input: { to: 'bob' }, callId: `call_${ctx.sessionId}` });
    await ctx.endStep(messageId, 'tool-calls');
    return;
  }
  for (const w of ctx.waits)
    if (w.kind === 'approval' && w.outcome === 'approved' && !w.started) await ctx.runApproved(w.callId!, async () => ({ sent: true }));
  await ctx.text(messageId, `done: ${ctx.waits.map((w) => w.outcome).join(',')}`);
  await ctx.endStep(messageId, 'stop');
}

test('a call that waits for approval: input, approval request; a reader who may approve ends at the wait, another follows the resume', async () => {
  const tmp = tempDir();
  const s = await startSessiond({ db: tmp.file('approve.db'), runner: approvalRunner });
  try {
    for (const [id, approved] of [
      ['ses_yes', true],
      ['ses_no', false],
    ] as const) {
      const { inputId } = await s.admit(id, { prompt: 'mail bob' });
      await waitFor(async () => (await s.status(id)).waits.some((w) => w.outcome === null), { what: 'the turn to wait' });
      const atWait = (await s.status(id)).seq;
      const early = fold(await s.engine.log.readSession(id), inputId, 0, { endAtWait: true });
      assert.ok(early.done, 'ends at the wait');
      await valid(early.chunks);
      assert.equal(
        early.chunks.filter((c) => c.type.startsWith('tool-')),
        [
          { type: 'tool-input-available', toolCallId: `call_${id}`, toolName: 'send_mail', input: { to: 'bob' } },
          { type: 'tool-approval-request', approvalId: `call_${id}`, toolCallId: `call_${id}` },
        ],
      );
      assert.is(early.chunks.at(-1)!.type, 'finish');
      await (approved ? s.approve(id, `call_${id}`) : s.deny(id, `call_${id}`, { reason: 'not now' }));
      await waitFor(async () => (await s.status(id)).execution?.outcome === 'succeeded', { what: 'the resumed turn to end' });
      const log = await s.engine.log.readSession(id);
      const outcome = approved
        ? { type: 'tool-output-available', toolCallId: `call_${id}`, output: { sent: true } }
        : { type: 'tool-output-denied', toolCallId: `call_${id}` };
      const done = approved ? 'done: approved' : 'done: denied';
      // a reader who may not approve: one message through the wait and the resume, to the end
      const whole = fold(log, inputId);
      assert.ok(whole.done);
      await valid(whole.chunks);
      assert.equal(
        whole.chunks.filter((c) => c.type.startsWith('tool-')).map((c) => c.type),
        ['tool-input-available', 'tool-approval-request', outcome.type],
      );
      assert.equal(
        whole.chunks.find((c) => c.type === outcome.type),
        outcome,
      );
      assert.equal(
        whole.chunks.filter((c) => c.type === 'text-delta').map((c) => c.delta),
        ['May I send it?', done],
      );
      // the answer's stream: nothing before the wait, then the decision and the resumed turn
      const answer = chatFold({ inputIds: [], messageId: 'msg_1', openedAtSeq: atWait, endAtWait: true, answersTo: [`call_${id}`] });
      const after = log.flatMap((e) => answer.feed(e));
      assert.ok(answer.done);
      await valid(after);
      assert.equal(
        after.filter((c) => c.type.startsWith('tool-') || c.type === 'text-delta').map((c) => c.type),
        [outcome.type, 'text-delta'],
      );
    }
  } finally {
    await s.close();
    tmp.remove();
  }
});

test('the model runner with a needsApproval tool (fake OpenAI server): the chunks of an approved and a denied call, in one turn', async () => {
  const server = await startFakeOpenAI({ apiKey: 'sk-test' });
  const tmp = tempDir();
  const sent: string[] = [];
  const tools = {
    send_mail: defineTool({
      description: 'Send an email',
      inputSchema: z.object({ to: z.string() }),
      needsApproval: true,
      execute: async ({ to }) => {
        sent.push(to);
        return `sent to ${to}`;
      },
    }),
  };
  const s = await startSessiond({
    db: tmp.file('model.db'),
    runner: openaiRunner({ model: 'fake-model', baseURL: server.url, apiKey: 'sk-test', tools, retry: { baseDelayMs: 10, maxDelayMs: 50 } }),
  });
  try {
    server.script(
      {
        kind: 'toolCalls',
        calls: [
          { id: 'call_a', name: 'send_mail', arguments: { to: 'a@example.com' } },
          { id: 'call_b', name: 'send_mail', arguments: { to: 'b@example.com' } },
        ],
      },
      { kind: 'text', text: 'Sent to a, not to b.' },
    );
    const { inputId } = await s.admit('ses_model', { prompt: 'mail a and b' });
    await waitFor(async () => (await s.status('ses_model')).waits.filter((w) => w.outcome === null).length === 2, { what: 'both calls to wait' });
    const asked = fold(await s.engine.log.readSession('ses_model'), inputId, 0, { endAtWait: true });
    await valid(asked.chunks);
    assert.equal(
      asked.chunks.filter((c) => c.type === 'tool-approval-request').map((c) => c.approvalId),
      ['call_a', 'call_b'],
    );
    await s.approve('ses_model', 'call_a');
    // the answer to one of two: its stream ends at the log's head (the turn still waits for the other)
    const half = await s.status('ses_model');
    const partial = chatFold({ inputIds: [], messageId: 'msg_1', openedAtSeq: half.seq, endAtWait: true, answersTo: ['call_a'], endAtSeq: half.seq });
    const partialChunks = (await s.engine.log.readSession('ses_model')).flatMap((e) => partial.feed(e));
    assert.ok(partial.done, 'ends: nothing more comes until the other answer');
    assert.equal(
      partialChunks.map((c) => c.type),
      ['finish'],
    );
    await s.deny('ses_model', 'call_b', { reason: 'not b' });
    await waitFor(async () => (await s.status('ses_model')).execution?.outcome === 'succeeded', { what: 'the resumed turn to end' });
    assert.equal(sent, ['a@example.com']);
    const all = fold(await s.engine.log.readSession('ses_model'), inputId);
    assert.ok(all.done);
    await valid(all.chunks);
    assert.equal(
      all.chunks.filter((c) => c.type.startsWith('tool-')).map((c) => [c.type, c.toolCallId]),
      [
        ['tool-input-available', 'call_a'],
        ['tool-approval-request', 'call_a'],
        ['tool-input-available', 'call_b'],
        ['tool-approval-request', 'call_b'],
        ['tool-output-denied', 'call_b'],
        ['tool-output-available', 'call_a'],
      ],
    );
    assert.match(
      all.chunks
        .filter((c) => c.type === 'text-delta')
        .map((c) => c.delta)
        .join(''),
      'Sent to a, not to b.',
    );
  } finally {
    await s.close();
    await server.close();
    tmp.remove();
  }
});

/** Asks about call_1, then (resumed) about call_2, then ends. */
async function twiceRunner(ctx: RunContext): Promise<void> {
  const { messageId } = await ctx.startStep();
  const asked = ctx.waits.map((w) => w.name);
  for (const w of ctx.waits) if (w.outcome === 'approved' && !w.started) await ctx.runApproved(w.callId!, async () => `ran ${w.callId}`);
  const next = ['call_1', 'call_2'].find((c) => !asked.includes(c));
  if (next) await ctx.requestApproval(messageId, { name: 'step', input: { n: next }, callId: next });
  else await ctx.text(messageId, 'all done');
  await ctx.endStep(messageId, next ? 'tool-calls' : 'stop');
}

test('an answer sent again after its turn went on to wait for another call: the stream reads from the ask, ends at the new request', async () => {
  const tmp = tempDir();
  const s = await startSessiond({ db: tmp.file('twice.db'), runner: twiceRunner });
  try {
    await s.admit('ses_twice', { prompt: 'go' });
    const waitsFor = (name: string) =>
      waitFor(async () => (await s.status('ses_twice')).waits.some((w) => w.name === name && w.outcome === null), { what: name });
    await waitsFor('call_1');
    await s.approve('ses_twice', 'call_1');
    await waitsFor('call_2');
    const request = { kind: 'approval' as const, sessionId: 'ses_twice', messageId: 'msg_1', answers: [{ callId: 'call_1', approved: true }] };
    const turn = await answerApprovals(s, await s.status('ses_twice'), request);
    const f = chatFold({ ...turn, messageId: 'msg_1' });
    const chunks = (await s.engine.log.readSession('ses_twice')).filter((e) => e.seq > turn.afterSeq).flatMap((e) => f.feed(e));
    assert.ok(f.done, 'the stream ends');
    await valid(chunks);
    assert.equal(
      chunks.filter((c) => c.type.startsWith('tool-')).map((c) => [c.type, c.toolCallId]),
      [
        ['tool-output-available', 'call_1'],
        ['tool-input-available', 'call_2'],
        ['tool-approval-request', 'call_2'],
      ],
    );
  } finally {
    await s.close();
    tmp.remove();
  }
});

test('a waiting turn cancelled: the call shows an error saying so, and the message ends', async () => {
  const tmp = tempDir();
  const s = await startSessiond({ db: tmp.file('cancel.db'), runner: approvalRunner });
  try {
    const { inputId } = await s.admit('ses_cancel', { prompt: 'mail bob' });
    await waitFor(async () => (await s.status('ses_cancel')).waits.some((w) => w.outcome === null), { what: 'the turn to wait' });
    await s.cancel('ses_cancel', 'no longer needed');
    await waitFor(async () => (await s.status('ses_cancel')).waits.every((w) => w.outcome !== null), { what: 'the wait to end' });
    const f = chatFold({ inputIds: [inputId], messageId: 'msg_1', openedAtSeq: 0 });
    const chunks = (await s.engine.log.readSession('ses_cancel')).flatMap((e) => f.feed(e));
    await valid(chunks);
    assert.ok(f.done, 'the message ends (a reader following the wait is not left hanging)');
    assert.equal(
      chunks.slice(-3).map((c) => [c.type, c.toolCallId ?? null, String(c.errorText).includes('no longer needed')]),
      [
        ['tool-output-error', 'call_ses_cancel', true],
        ['error', null, true],
        ['finish', null, false],
      ],
    );
  } finally {
    await s.close();
    tmp.remove();
  }
});

test.run();
