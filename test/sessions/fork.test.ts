/**
 * Forking on the embedded engine: the fork starts with the source's conversation up to a settled
 * point (what its model runner sees, its message rows), then lives its own life while the source
 * goes on; a point inside a turn is refused naming the nearest settled sequences; resends are
 * idempotent, and what collides is refused with what to do.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEngine, type Engine } from '../../src/engine.ts';
import { ErrorCode, isSessiondError } from '../../src/errors.ts';
import type { RunContext } from '../../src/runner/types.ts';
import type { TranscriptItem } from '../../src/events/transcript.ts';
import { sessionRows } from '../../src/projector/queries.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { parseMessage } from '../../src/projector/message-rows.ts';
import { catchUpProjection } from '../../src/projector/catch-up.ts';
import { tempDir } from '../support/tmp.ts';

/** What each turn's runner saw of the conversation, by session. */
const seen = new Map<string, TranscriptItem[][]>();
/** A runner that answers each prompt with a text part and one tool call, and notes the history it was given. */
async function runner(ctx: RunContext): Promise<void> {
  const history = [...(await ctx.history())];
  seen.set(ctx.sessionId, [...(seen.get(ctx.sessionId) ?? []), history]);
  const { messageId } = await ctx.startStep();
  await ctx.text(messageId, `answer to ${ctx.inputs.map((i) => i.prompt).join(' + ')}`);
  await ctx.tool(messageId, { name: 'lookup', input: { q: ctx.inputs[0]!.prompt } }, async () => ({ found: ctx.inputs[0]!.prompt.length }));
  await ctx.endStep(messageId);
}

async function inEngine(body: (engine: Engine) => Promise<void>): Promise<void> {
  const tmp = tempDir('sessiond-fork-');
  const engine = await openEngine({ file: tmp.file('fork.db'), runner });
  try {
    await body(engine);
  } finally {
    await engine.close();
    tmp.remove();
  }
}

async function turn(engine: Engine, id: string, prompt: string): Promise<number> {
  await engine.admit(id, { prompt });
  await engine.awaitIdle(id);
  return (await engine.status(id)).seq;
}

async function refusal(p: Promise<unknown>): Promise<{ code: string; message: string; details: Record<string, unknown> }> {
  try {
    await p;
  } catch (err) {
    if (isSessiondError(err)) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

const said = (items: readonly TranscriptItem[]) =>
  items.map((i) =>
    i.type === 'user'
      ? `user: ${i.text}`
      : i.type === 'assistant'
        ? `assistant: ${i.parts.map((p) => (p.type === 'tool' ? `${p.name}:${p.state}` : p.text)).join(' ')}`
        : 'summary',
  );

test('fork - the fork starts with the conversation up to the point; its runner sees it; then both live their own lives', async () =>
  inEngine(async (engine) => {
    const first = await turn(engine, 'ses_src', 'pick a colour');
    await turn(engine, 'ses_src', 'why that one');
    const fork = await engine.fork('ses_src', 'ses_alt', { at: first, tags: { branch: 'alt' } });
    assert.equal(fork, { sessionId: 'ses_alt', from: { sessionId: 'ses_src', seq: first }, seq: 1, created: true, items: 2 });
    await turn(engine, 'ses_alt', 'try green instead');
    assert.equal(
      said(seen.get('ses_alt')!.at(-1)!),
      ['user: pick a colour', 'assistant: answer to pick a colour lookup:succeeded', 'user: try green instead'],
      "the fork's runner sees the source's first turn, not its second",
    );
    await turn(engine, 'ses_src', 'and now');
    assert.equal(
      said(seen.get('ses_src')!.at(-1)!).filter((l) => l.startsWith('user')),
      ['user: pick a colour', 'user: why that one', 'user: and now'],
      'the source goes on, untouched by the fork',
    );
    const status = await engine.status('ses_alt');
    assert.equal(status.forkedFrom, { sessionId: 'ses_src', seq: first });
    assert.equal(status.tags, { branch: 'alt' });
    // the rows: the fork's first messages are the source's up to the point
    const rows = (id: string) =>
      sessionRows(engine.db, id).messages.map((m) => {
        const { type, data } = parseMessage(m);
        const d = data as { prompt?: unknown; parts?: { text: string }[]; tools?: { name: string; state: string; output?: unknown }[]; status?: string };
        return [m.id, type, d.prompt ?? d.parts?.map((p) => p.text), d.status, d.tools?.map((t) => [t.name, t.state, t.output])];
      });
    await catchUpProjection(engine.db, engine.log);
    const source = rows('ses_src');
    const alt = rows('ses_alt');
    assert.is(source.length, 6, 'three turns of the source: a prompt and an answer each');
    assert.equal(alt.slice(0, 2), source.slice(0, 2), 'the same messages: ids, prompts, text, tool calls and results');
    assert.is(alt.length, 4, 'then its own turn');
    assert.equal(alt[2]![2], 'try green instead');
    const page = await engine.list({ tags: { branch: 'alt' } });
    assert.equal(
      page.sessions.map((s) => [s.sessionId, s.forkedFrom]),
      [['ses_alt', { sessionId: 'ses_src', seq: first }]],
    );
  }));

test('fork - by default at the last settled point; inside a turn refused naming the nearest settled sequences', async () =>
  inEngine(async (engine) => {
    const first = await turn(engine, 'ses_src', 'one');
    const second = await turn(engine, 'ses_src', 'two');
    const latest = await engine.fork('ses_src', 'ses_latest');
    assert.is(latest.from.seq, second, 'the head, when the source is between turns');
    assert.is(latest.items, 4);
    const events = await engine.log.readSession('ses_src');
    const claim = events.find((e) => e.type === 'execution.claimed' && e.seq > first)!.seq;
    const inside = await refusal(engine.fork('ses_src', 'ses_mid', { at: claim + 1 }));
    assert.is(inside.code, ErrorCode.NotSettled);
    assert.match(inside.message, `sequence ${claim + 1} of session ses_src is inside a turn`);
    assert.match(inside.message, `Fork at ${claim - 1} or ${second}`, 'the nearest settled sequences (the admission before the claim, the settle after)');
    assert.equal([inside.details.nearestBefore, inside.details.nearestAfter], [claim - 1, second]);
    const past = await refusal(engine.fork('ses_src', 'ses_past', { at: second + 1 }));
    assert.is(past.code, ErrorCode.InvalidOption);
    assert.match(past.message, `has ${second} events; fork at a sequence from 1 to ${second}`);
    // the point right after the first admission: nothing had run yet, so nothing is carried
    const empty = await engine.fork('ses_src', 'ses_empty', { at: 1 });
    assert.is(empty.items, 0);
    assert.equal((await engine.log.readSession('ses_empty'))[0]!.payload, { from: { sessionId: 'ses_src', seq: 1 }, transcript: [] });
  }));

test('fork - sent again it answers created false; into a taken id, of an unknown source or into itself it is refused; forked input ids stay taken', async () =>
  inEngine(async (engine) => {
    const seq = await turn(engine, 'ses_src', 'hello');
    const inputId = (await engine.log.readSession('ses_src'))[0]!.payload as { inputId: string };
    await engine.fork('ses_src', 'ses_f');
    assert.equal(await engine.fork('ses_src', 'ses_f'), { sessionId: 'ses_f', from: { sessionId: 'ses_src', seq }, seq: 1, created: false, items: 0 });
    assert.is((await engine.fork('ses_src', 'ses_f', { at: seq })).created, false);
    assert.is((await engine.log.readSession('ses_f')).length, 1, 'one session.forked, however often it is sent');
    const taken = await refusal(engine.fork('ses_src', 'ses_f', { at: 1 }));
    assert.is(taken.code, ErrorCode.SessionExists);
    assert.match(taken.message, 'it already has 1 events (a fork of ses_src at sequence');
    await turn(engine, 'ses_other', 'x');
    assert.is((await refusal(engine.fork('ses_src', 'ses_other'))).code, ErrorCode.SessionExists);
    assert.is((await refusal(engine.fork('ses_nobody', 'ses_g'))).code, ErrorCode.NotFound);
    assert.is((await refusal(engine.fork('ses_src', 'ses_src'))).code, ErrorCode.InvalidOption);
    const reused = await refusal(engine.admit('ses_f', { id: inputId.inputId, prompt: 'again' }));
    assert.is(reused.code, ErrorCode.InputConflict);
    assert.match(reused.message, 'is the id of a prompt in the conversation session ses_f was forked with');
    // the projection folds all of it without a complaint
    assert.ok((await catchUpProjection(engine.db, engine.log)) >= 0);
    assert.is(sessionRows(engine.db, 'ses_f').messages.length, 2);
  }));

test('fork - a tool call made without input is stored as null input, and the fork reads back', async () => {
  const tmp = tempDir('sessiond-fork-noinput-');
  const engine = await openEngine({
    file: tmp.file('fork.db'),
    runner: async (ctx) => {
      const { messageId } = await ctx.startStep();
      await ctx.tool(messageId, { name: 'clock', input: undefined }, async () => 'noon');
      await ctx.endStep(messageId);
    },
  });
  try {
    await engine.admit('ses_src', { prompt: 'what time is it' });
    await engine.awaitIdle('ses_src');
    await engine.fork('ses_src', 'ses_f');
    const [forked] = (await engine.log.readSession('ses_f')) as [SessionEvent<'session.forked'>];
    const step = forked.payload.transcript.find((i) => i.type === 'assistant');
    assert.equal(step?.type === 'assistant' && step.parts.map((p) => p.type === 'tool' && [p.name, p.input, p.state]), [['clock', null, 'succeeded']]);
  } finally {
    await engine.close();
    tmp.remove();
  }
});

test.run();
