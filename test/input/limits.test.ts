/**
 * Bounded sessions on the embedded engine: what may wait in a session is limited (admissions past a
 * limit are refused with what to do, nothing admitted is lost), a turn's promotion never has to fit
 * every pending input into one append, buffered runner writes and tool results never outgrow an
 * append, an operator can drop pending inputs, and a worker's memory for loaded sessions is bounded.
 */
import type { SessionEvent } from '../../src/events/envelope.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../../src/errors.ts';
import { openEngine } from '../../src/engine.ts';
import { startSessiond } from '../../src/host.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import type { Runner } from '../../src/runner/types.ts';
import { auditLog } from '../../src/audit/audit-log.ts';
import { auditLiveness } from '../../src/audit/liveness.ts';
import { MAX_PROMOTIONS_PER_APPEND, parseLimits } from '../../src/input/limits.ts';
import { inputsForTurn } from '../../src/input/turn.ts';
import { expectCode } from '../../src/testing/fixtures.ts';
import { sessionView, PENDING_PAGE } from '../../src/machines/session-view.ts';
import { hydrate } from '../../src/machines/decider.ts';
import { tempDir } from '../support/tmp.ts';

const tmp = tempDir('sessiond-limits-');
const id128 = (n: number) => `inp_${'x'.repeat(116)}_${String(n).padStart(6, '0')}`;

test('limits - an admission past the pending inputs of a session is refused naming the limit and what to do; the session then runs them all', async () => {
  const engine = await openEngine({ file: tmp.file('inputs.db'), runner: echoRunner({ steps: 1 }), limits: { maxPendingInputs: 250 } });
  try {
    for (let i = 0; i < 250; i++) await engine.admit('ses_full', { id: id128(i), prompt: `p${i}`, delivery: 'steer', wake: false });
    const refused = await expectCode(
      engine.admit('ses_full', { id: id128(250), prompt: 'one too many', wake: false }),
      ErrorCode.LimitExceeded,
      'it would be pending input 251, over the limit of 250 pending inputs per session',
    );
    assert.match(refused.message, 'sessiond cancel ses_full --pending');
    assert.match(refused.message, '--max-pending-inputs');
    // a resend of an input already admitted is still answered (idempotency is not a new admission)
    assert.is((await engine.admit('ses_full', { id: id128(3), prompt: 'p3', delivery: 'steer', wake: false })).created, false);
    // a wake runs what waits (in turns of at most MAX_PROMOTIONS_PER_APPEND inputs: see below)
    await engine.wake('ses_full');
    await engine.awaitIdle('ses_full');
    const status = await engine.status('ses_full');
    assert.is(status.pendingCount, 0);
    const events = await engine.log.readSession('ses_full');
    assert.is(events.filter((e) => e.type === 'input.promoted').length, 250);
    assert.equal(auditLog(events), []);
    // and a new prompt is admitted and runs
    await engine.admit('ses_full', { id: 'inp_victim', prompt: 'my turn now' });
    await engine.awaitIdle('ses_full');
    assert.is((await engine.status('ses_full')).outcome, 'succeeded');
  } finally {
    await engine.close();
  }
});

test('limits - a full queue drains by itself: the refusal wakes the session, a retried prompt gets in and runs, no operator', async () => {
  const engine = await openEngine({ file: tmp.file('drains.db'), runner: echoRunner({ steps: 1 }), limits: { maxPendingInputs: 150 } });
  try {
    for (let i = 0; i < 150; i++) await engine.admit('ses_sleepy', { id: `inp_s${i}`, prompt: `p${i}`, delivery: 'steer', wake: false });
    const refused = await expectCode(engine.admit('ses_sleepy', { id: 'inp_victim', prompt: 'mine' }), ErrorCode.LimitExceeded);
    assert.match(refused.message, 'The session was woken to run what is pending: retry in a moment');
    // the victim retries, nobody wakes or drops anything
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        assert.ok((await engine.admit('ses_sleepy', { id: 'inp_victim', prompt: 'mine' })).admittedSeq > 150);
        break;
      } catch (err) {
        if ((err as { code?: string }).code !== ErrorCode.LimitExceeded || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    await engine.awaitIdle('ses_sleepy');
    const events = await engine.log.readSession('ses_sleepy');
    const promoted = events.filter((e) => e.type === 'input.promoted');
    assert.is(promoted.length, 151, 'the sleeping inputs and the victim ran');
    assert.ok(promoted.some((e) => (e.payload as { inputId: string }).inputId === 'inp_victim'));
    const perAppend = new Map<number, number>();
    for (const e of promoted) perAppend.set(e.position!, (perAppend.get(e.position!) ?? 0) + 1);
    assert.ok(Math.max(...perAppend.values()) <= MAX_PROMOTIONS_PER_APPEND, 'bounded appends');
    assert.is((await engine.status('ses_sleepy')).pendingCount, 0);
  } finally {
    await engine.close();
  }
});

test('limits - a turn promotes at most 100 inputs per append, however many wait', async () => {
  const pending = Array.from({ length: 300 }, (_, i) => ({
    inputId: `inp_${i}`,
    delivery: i === 7 ? ('queue' as const) : ('steer' as const),
    seq: i + 1,
    wake: false,
    source: 'user' as const,
    prompt: 'p',
  }));
  const turn = inputsForTurn(pending, 0);
  assert.is(turn.length, MAX_PROMOTIONS_PER_APPEND);
  assert.ok(
    turn.some((p) => p.inputId === 'inp_7'),
    'the queued input is in the turn',
  );
  assert.equal(
    turn.slice(0, 3).map((p) => p.inputId),
    ['inp_0', 'inp_1', 'inp_2'],
    'the oldest steering inputs first',
  );
  // on the engine: no append promotes more than that
  const engine = await openEngine({ file: tmp.file('promote.db'), runner: echoRunner({ steps: 2 }) });
  try {
    for (let i = 0; i < 300; i++) await engine.admit('ses_many', { id: `inp_${i}`, prompt: 'p', delivery: 'steer', wake: false });
    await engine.wake('ses_many');
    await engine.awaitIdle('ses_many');
    const events = await engine.log.readSession('ses_many');
    const byPosition = new Map<number, number>();
    for (const e of events) if (e.type === 'input.promoted') byPosition.set(e.position!, (byPosition.get(e.position!) ?? 0) + 1);
    assert.ok(Math.max(...byPosition.values()) <= MAX_PROMOTIONS_PER_APPEND, `an append promoted ${Math.max(...byPosition.values())}`);
    assert.is(
      [...byPosition.values()].reduce((a, b) => a + b, 0),
      300,
    );
    assert.is((await engine.status('ses_many')).pendingCount, 0);
  } finally {
    await engine.close();
  }
});

test('limits - pending prompt bytes per session are bounded; a prompt over its own limit is refused before that', async () => {
  const engine = await openEngine({ file: tmp.file('bytes.db'), runner: echoRunner(), limits: { maxPendingBytes: 1024 * 1024 } });
  try {
    const big = 'x'.repeat(256 * 1024);
    for (let i = 0; i < 4; i++) await engine.admit('ses_bytes', { id: `inp_${i}`, prompt: big, wake: false });
    await expectCode(
      engine.admit('ses_bytes', { id: 'inp_4', prompt: big, wake: false }),
      ErrorCode.LimitExceeded,
      'over the limit of 1048576 bytes per session',
    );
    await expectCode(engine.admit('ses_bytes', { prompt: `${big}y`, wake: false }), ErrorCode.InvalidOption, 'over the limit of 262144 bytes');
    // the refusal woke the session: what waited runs (a full queue drains by itself)
    await engine.awaitIdle('ses_bytes');
    const events = await engine.log.readSession('ses_bytes');
    assert.is(events.filter((e) => e.type === 'input.promoted').length, 4);
  } finally {
    await engine.close();
  }
});

test('limits - bad limits are refused by name', () => {
  expectCode(() => parseLimits('x', { maxPendingInputs: 0 }), ErrorCode.InvalidOption, 'maxPendingInputs=0');
  expectCode(() => parseLimits('x', { maxPendingInput: 5 } as never), ErrorCode.InvalidOption, 'Unknown x limits option "maxPendingInput"');
  expectCode(() => parseLimits('x', { maxPromptBytes: 10, maxPendingBytes: 5 }), ErrorCode.InvalidOption, 'could never be admitted');
});

test('limits - a session view lists one page of pending inputs with their count and bytes', async () => {
  const engine = await openEngine({ file: tmp.file('view.db'), runner: echoRunner() });
  try {
    for (let i = 0; i < 1000; i++) await engine.admit('ses_view', { id: id128(i), prompt: 'p', delivery: 'steer', wake: false });
    const view = await engine.status('ses_view');
    assert.is(view.pending.length, PENDING_PAGE);
    assert.equal([view.pendingCount, view.pendingBytes, view.pendingFrom], [1000, 1000, 0]);
    assert.ok(JSON.stringify(view).length < 40_000, `the view is ${JSON.stringify(view).length} characters`);
    // (sessionView itself: the same from a snapshot folded from the log)
    assert.is(sessionView(hydrate('ses_view', await engine.log.readSession('ses_view')), 0).pendingCount, 1000);
  } finally {
    await engine.close();
  }
});

test('limits - dropPending drops what waits unrun, check sees it, the session takes prompts again', async () => {
  // the whole worker: its projector keeps session_input
  const host = await startSessiond({ db: tmp.file('drop.db'), runner: echoRunner(), limits: { maxPendingInputs: 3 } });
  const engine = host.engine;
  try {
    for (let i = 0; i < 3; i++) await engine.admit('ses_drop', { id: `inp_${i}`, prompt: 'p', wake: false });
    const full = auditLiveness(await engine.log.readSession('ses_drop'), { now: Date.now(), limits: { maxPendingInputs: 3, maxPendingBytes: 1 << 30 } });
    assert.equal(
      full.map((v) => v.rule),
      ['pending_full'],
    );
    assert.match(full[0]!.message, 'sessiond cancel ses_drop --pending');
    const one = await engine.dropPending('ses_drop', { inputIds: ['inp_1'], reason: 'operator' });
    assert.equal(one.dropped, ['inp_1']);
    const rest = await engine.dropPending('ses_drop');
    assert.equal(rest.dropped, ['inp_0', 'inp_2']);
    assert.equal((await engine.dropPending('ses_drop')).dropped, [], 'nothing left to drop');
    await waitRows(
      () => engine.db.prepare('SELECT COUNT(*) AS n FROM session_input WHERE session_id = ? AND dropped_seq IS NOT NULL').get('ses_drop') as { n: number },
      3,
    );
    await engine.admit('ses_drop', { id: 'inp_3', prompt: 'now it runs' });
    await engine.awaitIdle('ses_drop');
    const events = await engine.log.readSession('ses_drop');
    assert.equal(
      events.filter((e) => e.type === 'input.promoted').map((e) => (e.payload as { inputId: string }).inputId),
      ['inp_3'],
      'the dropped inputs never ran',
    );
    assert.equal(auditLog(events), []);
    assert.equal(auditLiveness(events, { now: Date.now() + 3_600_000 }), []);
  } finally {
    await host.close();
  }
});

/** Polls the projection (it follows the log in the background) until `read()` counts `n`. */
async function waitRows(read: () => { n: number }, n: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (read().n !== n) {
    if (Date.now() > deadline) assert.unreachable(`the projection shows ${read().n} rows, expected ${n}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('limits - on the embedded log a 3 MB tool result is stored beside the log, not refused; medium results stay in their events; the turn settles', async () => {
  const big = 'r'.repeat(3 * 1024 * 1024);
  let returned: unknown;
  const runner: Runner = async (ctx) => {
    const { messageId } = await ctx.startStep();
    returned = await ctx.tool(messageId, { name: 'fetch_report', input: { id: 1 } }, async () => big);
    // many medium results: buffered writes are appended before they outgrow a message
    for (let i = 0; i < 12; i++) await ctx.tool(messageId, { name: 'page', input: { i } }, async () => 'p'.repeat(200 * 1024));
    await ctx.text(messageId, 'done');
    await ctx.endStep(messageId);
  };
  const engine = await openEngine({ file: tmp.file('tool.db'), runner });
  try {
    await engine.admit('ses_tool', { prompt: 'go' });
    await engine.awaitIdle('ses_tool');
    assert.is((await engine.status('ses_tool')).outcome, 'succeeded');
    assert.is(returned, big, 'the tool call returns its whole result to the runner');
    const events = await engine.log.readSession('ses_tool');
    assert.is(events.filter((e) => e.type === 'tool.failed').length, 0);
    const succeeded = events.filter((e): e is SessionEvent<'tool.succeeded'> => e.type === 'tool.succeeded');
    assert.is(succeeded.length, 13);
    const ref = succeeded[0]!.payload.outputBlob!;
    assert.equal([ref.size, ref.mediaType, succeeded[0]!.payload.output], [big.length + 2, 'application/json', undefined]);
    assert.is(Buffer.from(await engine.blobs!.get(ref.sha256)).toString(), JSON.stringify(big));
    assert.ok(succeeded.slice(1).every((e) => e.payload.outputBlob === undefined && typeof e.payload.output === 'string'));
  } finally {
    await engine.close();
  }
});

test.after(() => tmp.remove());
test.run();
