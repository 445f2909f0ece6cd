/**
 * What a runner knows of the conversation: `ctx.history()` is the session's transcript (earlier
 * turns, this turn's prompts, what this turn wrote), folded from the log with one read of the events
 * since the last fold; a compaction's summary replaces what it summarized; tokens are recorded per
 * step and summed per session; a hand-back's continuation says what it continues.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { EventLog } from '../../src/events/event-log.ts';
import { Transcripts } from '../../src/execution/transcripts.ts';
import type { TranscriptItem } from '../../src/events/transcript.ts';
import type { Runner } from '../../src/runner/types.ts';
import { sessionRows } from '../../src/projector/queries.ts';
import { Projector } from '../../src/projector/projector.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { deleteSessionData } from '../../src/storage/sqlite/delete-session.ts';
import { fixture, gatedRunner } from '../support/fixture.ts';

type Fx = ReturnType<typeof fixture>;
type Svc = ReturnType<Fx['service']>;

/** One turn: admit, wake, wait until the session is idle. */
async function turn(fx: Fx, svc: Svc, sessionId: string, prompt: string): Promise<void> {
  await fx.admit(svc, sessionId, { prompt });
  await svc.wake(sessionId);
  await svc.awaitIdle(sessionId);
}

/** A transcript as short lines, for assertions. */
const lines = (items: readonly TranscriptItem[]) =>
  items.map((i) => {
    if (i.type === 'user') return `user: ${i.text}`;
    if (i.type === 'summary') return `summary: ${i.summary}`;
    return `assistant(${i.status}): ${i.parts.map((p) => (p.type === 'tool' ? `[${p.name} ${p.state} ${JSON.stringify(p.output)}]` : p.text)).join(' ')}`;
  });

/** Answers each prompt with "re: <prompt>" after one tool call, recording what history it saw. */
function conversing(seen: string[][]): Runner {
  return async (ctx) => {
    seen.push(lines(await ctx.history()));
    const { messageId } = await ctx.startStep();
    await ctx.phase('unknown');
    const n = await ctx.tool(messageId, { name: 'count', input: {} }, async () => ctx.inputs[0]!.prompt.length);
    await ctx.text(messageId, `re: ${ctx.inputs[0]!.prompt} (${n})`);
    await ctx.endStep(messageId, 'stop', { inputTokens: 10 * seen.length, outputTokens: 3 });
  };
}

test('history - each turn sees every earlier prompt, answer and tool result, then its own prompt; tokens summed per session', async () => {
  const fx = fixture();
  const seen: string[][] = [];
  const svc = fx.service({ runner: conversing(seen) });
  for (const prompt of ['hello', 'and then?', 'bye']) {
    await turn(fx, svc, 'ses_h', prompt);
  }
  assert.equal(seen, [
    ['user: hello'],
    ['user: hello', 'assistant(completed): [count succeeded 5] re: hello (5)', 'user: and then?'],
    [
      'user: hello',
      'assistant(completed): [count succeeded 5] re: hello (5)',
      'user: and then?',
      'assistant(completed): [count succeeded 9] re: and then? (9)',
      'user: bye',
    ],
  ]);
  const status = await svc.status('ses_h');
  assert.equal(status.context.usage, { inputTokens: 10 + 20 + 30, outputTokens: 9 }, "the session sums its steps' tokens");
  await fx.close();
});

test('history - a queued prompt joins the transcript when its turn takes it, not when it is admitted', async () => {
  const fx = fixture();
  const gate = gatedRunner();
  const svc = fx.service({ runner: gate.runner });
  await fx.admit(svc, 'ses_q', { prompt: 'first' });
  void svc.wake('ses_q');
  await gate.started(1);
  await fx.admit(svc, 'ses_q', { prompt: 'second (queued)', wake: false });
  assert.equal(lines(await gate.runs[0]!.ctx.history()), ['user: first']);
  gate.runs[0]!.release();
  await gate.started(2);
  assert.equal(lines(await gate.runs[1]!.ctx.history()), ['user: first', 'user: second (queued)']);
  gate.runs[1]!.release();
  await svc.awaitIdle('ses_q');
  await fx.close();
});

test("history - a compaction's summary replaces the earlier items; the turn in progress keeps its prompt; its tokens count", async () => {
  const fx = fixture();
  const seen: string[][] = [];
  let compactNext = false;
  const runner: Runner = async (ctx) => {
    if (compactNext) {
      await ctx.compact('context_length_exceeded', async () => ({
        summary: 'they said hello and asked what next',
        usage: { inputTokens: 100, outputTokens: 7 },
      }));
    }
    await conversing(seen)(ctx);
  };
  const svc = fx.service({ runner });
  for (const prompt of ['hello', 'and then?']) {
    await turn(fx, svc, 'ses_c', prompt);
  }
  compactNext = true;
  await turn(fx, svc, 'ses_c', 'now?');
  assert.equal(seen[2], ['summary: they said hello and asked what next', 'user: now?']);
  compactNext = false;
  await turn(fx, svc, 'ses_c', 'last');
  assert.equal(seen[3], ['summary: they said hello and asked what next', 'user: now?', 'assistant(completed): [count succeeded 4] re: now? (4)', 'user: last']);
  assert.equal((await svc.status('ses_c')).context.usage, { inputTokens: 10 + 20 + 30 + 40 + 100, outputTokens: 4 * 3 + 7 });
  await fx.close();
});

test('history - a turn handed back at shutdown is continued with what it continues, as data, and its partial answer in the history', async () => {
  const fx = fixture();
  const gate = gatedRunner({ observeAbort: true });
  const a = fx.service({ runner: gate.runner, ownerId: 'own_a' });
  await fx.admit(a, 'ses_b', { prompt: 'write a long answer' });
  void a.wake('ses_b');
  await gate.started(1);
  const ctx = gate.runs[0]!.ctx;
  const { messageId } = await ctx.startStep();
  await ctx.text(messageId, 'The first half');
  await ctx.flush();
  await a.close(); // hands the turn back
  const b = fx.service({ runner: conversing([]), ownerId: 'own_b' });
  const status = await b.status('ses_b');
  const continuation = status.context.pending[0]!;
  assert.equal(continuation.continues, {
    executionId: ctx.executionId,
    reason: 'handed_back',
    phase: 'safe',
    inputIds: ctx.inputs.map((i) => i.inputId),
    assistantMessageId: messageId,
    retryTools: [],
  });
  const seen: string[][] = [];
  const c = fx.service({ runner: conversing(seen), ownerId: 'own_c' });
  await c.wake('ses_b');
  await c.awaitIdle('ses_b');
  assert.equal(seen[0]!.slice(0, 2), ['user: write a long answer', 'assistant(failed): The first half']);
  // the prompt says it in plain words, no internal ids (what it continues is the data above)
  assert.is(seen[0]![2], 'user: Continue where the previous answer stopped: it was interrupted because the worker running it was shut down.');
  await fx.close();
});

test('history - the transcript is folded from the events since the last fold: one read per call, none per message', async () => {
  const fx = fixture();
  const svc = fx.service({ runner: conversing([]) });
  for (const prompt of ['one', 'two']) {
    await turn(fx, svc, 'ses_r', prompt);
  }
  const log = svc.handler.log;
  const reads: (number | undefined)[] = [];
  const spy: EventLog = Object.assign(Object.create(log) as EventLog, {
    readSession: (id: string, o?: { afterSeq?: number; limit?: number }) => {
      reads.push(o?.afterSeq);
      return log.readSession(id, o);
    },
  });
  const transcripts = new Transcripts(spy);
  const first = await transcripts.of('ses_r');
  assert.equal(reads, [0], 'a cold fold reads the session once');
  await turn(fx, svc, 'ses_r', 'three');
  const second = await transcripts.of('ses_r');
  assert.equal(reads, [0, first.seq - 1], 'the next fold reads only what came after (from the last event folded, to check the log still has it)');
  assert.is(lines(second.items).length, 6);
  // a session deleted and begun again under the same id has another event at the cached head: folded afresh
  const again = fixture();
  const svc2 = again.service({ runner: conversing([]) });
  await turn(again, svc2, 'ses_r2', 'old');
  const cache = new Transcripts(svc2.handler.log);
  assert.equal(lines((await cache.of('ses_r2')).items)[0], 'user: old');
  const other = openDatabase(again.file); // deleted by another process
  deleteSessionData(other, 'ses_r2', { now: 1, by: 'test' });
  other.close();
  await turn(again, again.service({ runner: conversing([]) }), 'ses_r2', 'new');
  assert.equal(
    lines((await cache.of('ses_r2')).items).filter((l) => l.startsWith('user')),
    ['user: new'],
    'nothing of the old session',
  );
  await again.close();
  // the projection agrees: usage is on the message rows
  const db = openDatabase(fx.file);
  new Projector(db).apply(await log.readSession('ses_r'));
  const assistants = sessionRows(db, 'ses_r').messages.filter((m) => m.type === 'assistant');
  assert.equal(
    assistants.map((m) => (JSON.parse(m.data) as { usage?: unknown }).usage),
    [10, 20, 30].map((inputTokens) => ({ inputTokens, outputTokens: 3 })),
  );
  db.close();
  await fx.close();
});

test.run();
