/**
 * Rebuild gives identical rows: a randomized workload (fast-check, fixed seed) of admissions,
 * steps, text, tools that succeed or fail, compactions, steering, cancellations, failed steps and
 * promotions across several sessions runs on the real engine, plus recovery streams with wake
 * attempts appended next to it. The projection built incrementally (a follower on another
 * connection, and the exact committed batches one by one) equals a rebuild from the log into a
 * fresh database, row for row and hash for hash.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { ManualClock } from '../../src/clock.ts';
import { ErrorCode, isSessiondError } from '../../src/errors.ts';
import { sequentialIds } from '../../src/ids.ts';
import { openEngine, type Engine } from '../../src/engine.ts';
import type { DraftEvent, SessionEvent } from '../../src/events/envelope.ts';
import type { EventLog, ReadPagesOptions, SubscribeOptions } from '../../src/events/event-log.ts';
import type { Runner, RunContext } from '../../src/runner/types.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { waitFor } from '../../src/testing/wait.ts';
import { Projector } from '../../src/projector/projector.ts';
import { projectionHash, projectionRows, rebuildProjection } from '../../src/projector/rebuild.ts';
import { tempDir } from '../support/tmp.ts';
import { EMPTY_PROJECTION, all, memoryDb } from './support.ts';
import { draft, ev, stream, type Proto } from '../../src/testing/fixtures.ts';

type StepOp =
  | { t: 'text' }
  | { t: 'toolOk'; durable: boolean }
  | { t: 'toolFail'; name: string }
  | { t: 'compact' }
  | { t: 'steer' }
  | { t: 'queue' }
  | { t: 'cancel' };
type Step = { ops: StepOp[]; end: 'end' | 'fail' };
type Op =
  | { kind: 'admit'; session: number; delivery: 'steer' | 'queue'; wake: boolean }
  | { kind: 'wake'; session: number }
  | { kind: 'cancel'; session: number }
  | { kind: 'recovery'; attempts: number; parked: boolean; continuation: boolean; tool: boolean };

const stepOp: fc.Arbitrary<StepOp> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ t: 'text' as const }) },
  { weight: 2, arbitrary: fc.boolean().map((durable) => ({ t: 'toolOk' as const, durable })) },
  { weight: 2, arbitrary: fc.constantFrom('TypeError', 'RangeError', 'TimeoutError').map((name) => ({ t: 'toolFail' as const, name })) },
  { weight: 1, arbitrary: fc.constant({ t: 'compact' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'steer' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'queue' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'cancel' as const }) },
);
const script = fc.array(fc.record({ ops: fc.array(stepOp, { maxLength: 4 }), end: fc.constantFrom<Step['end']>('end', 'end', 'end', 'fail') }), {
  minLength: 1,
  maxLength: 3,
});
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('admit' as const),
      session: fc.nat(3),
      delivery: fc.constantFrom<'steer' | 'queue'>('steer', 'queue'),
      wake: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('wake' as const), session: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), session: fc.nat(3) }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('recovery' as const), attempts: fc.nat(3), parked: fc.boolean(), continuation: fc.boolean(), tool: fc.boolean() }),
  },
);
const workload = fc.record({ ops: fc.array(op, { minLength: 4, maxLength: 18 }), scripts: fc.array(script, { minLength: 1, maxLength: 6 }) });

/**
 * Runs turns from the scripts, in turn order; each op writes through the run context. Admissions
 * from inside a turn have a budget: each one makes the session run another turn.
 */
function scriptedRunner(scripts: Step[][], engine: () => Engine): Runner {
  let turn = 0;
  let admissions = 6;
  return async (ctx: RunContext) => {
    const steps = scripts[turn++ % scripts.length]!;
    for (const step of steps) {
      await ctx.phase('unknown');
      const { messageId } = await ctx.startStep();
      for (const o of step.ops) {
        if (o.t === 'text') await ctx.text(messageId, `text of ${messageId}`);
        if (o.t === 'toolOk') await ctx.tool(messageId, { name: 'lookup', input: { q: messageId }, durable: o.durable }, async () => ({ ok: true }));
        if (o.t === 'toolFail')
          await ctx
            .tool(messageId, { name: 'write', input: [1, 2] }, async () => {
              throw Object.assign(new Error('no'), { name: o.name });
            })
            .catch(() => undefined);
        if (o.t === 'compact') await ctx.compact('context overflow', async () => 'summary');
        if ((o.t === 'steer' || o.t === 'queue') && admissions-- > 0)
          await engine().admit(ctx.sessionId, { prompt: `${o.t} during ${messageId}`, delivery: o.t, wake: false });
        if (o.t === 'cancel') await engine().cancel(ctx.sessionId, 'user pressed stop');
      }
      if (step.end === 'fail') {
        await ctx.failStep(messageId, { type: 'model', name: 'APIError', message: 'overloaded' });
        throw new Error('model overloaded');
      }
      await ctx.endStep(messageId);
    }
  };
}

/** A log that records each committed append as the batch it was. */
class RecordingLog implements EventLog {
  readonly batches: SessionEvent[][] = [];
  constructor(private readonly inner: EventLog) {}
  get name() {
    return this.inner.name;
  }
  async append(sessionId: string, expectedSeq: number, drafts: DraftEvent[]) {
    const committed = await this.inner.append(sessionId, expectedSeq, drafts);
    this.batches.push(committed);
    return committed;
  }
  readSession(sessionId: string, options?: { afterSeq?: number; limit?: number }) {
    return this.inner.readSession(sessionId, options);
  }
  lastSeq(sessionId: string) {
    return this.inner.lastSeq(sessionId);
  }
  readAll(options?: { after?: number; limit?: number }) {
    return this.inner.readAll(options);
  }
  readPages(options?: ReadPagesOptions) {
    return this.inner.readPages(options);
  }
  head() {
    return this.inner.head();
  }
  subscribe(options: SubscribeOptions) {
    return this.inner.subscribe(options);
  }
  close() {
    return this.inner.close();
  }
}

/** A recovery of an expired execution, with wake attempts, appended directly (as the recovery sweep would write it). */
async function recoveryStream(log: EventLog, sessionId: string, o: Extract<Op, { kind: 'recovery' }>) {
  let seq = 0;
  let n = 0;
  const append = async (...events: Proto[]) => {
    const drafts = events.map((event) => {
      n++;
      return draft(event, { id: `evt_${sessionId}_${n}`, time: 100 * n });
    });
    seq = (await log.append(sessionId, seq, drafts)).at(-1)!.seq;
  };
  const [exe, exe2, msg, cont] = [`exe_${sessionId}`, `exe_${sessionId}_2`, `msg_${sessionId}`, `inp_cont_${sessionId}`];
  await append(ev('input.admitted', { inputId: `inp_${sessionId}`, prompt: 'p', delivery: 'queue', wake: true }));
  await append(ev('execution.claimed', { executionId: exe, ownerId: 'own_dead', expiresAt: 500, leaseMs: 400, assistantSeq: -1 }));
  await append(ev('execution.started', { executionId: exe }), ev('input.promoted', { inputId: `inp_${sessionId}`, executionId: exe }));
  await append(ev('execution.phase', { executionId: exe, phase: 'unknown' }), ev('step.started', { executionId: exe, messageId: msg, step: 0 }));
  if (o.tool)
    await append(
      ev('tool.called', { executionId: exe, messageId: msg, callId: 'call_1', name: 'deploy', input: {}, durable: true, idempotencyKey: 'k' }),
      ev('tool.started', { executionId: exe, messageId: msg, callId: 'call_1' }),
    );
  const interrupted = { type: 'interrupted', name: 'Interrupted', message: 'lease lost' };
  await append(
    ev('recovery.started', { executionId: exe }),
    ...(o.tool ? [ev('tool.failed', { executionId: exe, messageId: msg, callId: 'call_1', error: interrupted })] : []),
    ev('step.recovered', { executionId: exe, messageId: msg, reason: 'lease lost' }),
    ...(o.continuation ? [ev('input.admitted', { inputId: cont, prompt: 'continue', delivery: 'queue', wake: true, source: 'recovery' })] : []),
    ev('recovery.completed', { executionId: exe, assistantMessageId: msg, continuationInputId: o.continuation ? cont : null, phase: 'unknown' }),
  );
  if (!o.continuation) return;
  for (let a = 1; a <= o.attempts; a++) {
    await append(ev('recovery.wake_requested', { executionId: exe, attempt: a }));
    await append(
      ev('recovery.wake_failed', {
        executionId: exe,
        attempt: a,
        error: { type: 'wake_refused', message: `attempt ${a}` },
        parked: o.parked && a === o.attempts,
      }),
    );
  }
  if (o.parked && o.attempts > 0) return;
  await append(
    ev('execution.claimed', { executionId: exe2, ownerId: 'own_b', expiresAt: 9_000, leaseMs: 400, assistantSeq: 5 }),
    ev('recovery.wake_delivered', { executionId: exe, byExecutionId: exe2 }),
  );
  await append(ev('execution.started', { executionId: exe2 }), ev('input.promoted', { inputId: cont, executionId: exe2 }));
  await append(ev('execution.settled', { executionId: exe2, outcome: 'succeeded' }));
}

const seen = new Map<string, number>();

async function runWorkload(w: { ops: Op[]; scripts: Step[][] }): Promise<void> {
  const tmp = tempDir();
  const file = tmp.file('w.db');
  const logDb = openDatabase(file);
  migrate(logDb);
  const log = new RecordingLog(new SqliteEventLog(logDb, { maxPollMs: 10 }));
  let engine!: Engine;
  engine = await openEngine({ file, log, runner: scriptedRunner(w.scripts, () => engine), clock: new ManualClock(1_000), ids: sequentialIds() });
  // the incremental projection: a follower on its own connection, folding batches as they commit
  const followerDb = openDatabase(file);
  const followerLog = new SqliteEventLog(followerDb, { maxPollMs: 10 });
  const follower = new Projector(followerDb);
  const errors: unknown[] = [];
  const sub = follower.follow(followerLog, { onError: (e) => errors.push(e) });
  let recoveries = 0;
  for (const o of w.ops) {
    const sessionId = o.kind === 'recovery' ? `ses_rec${recoveries++}` : `ses_${o.session}`;
    if (o.kind === 'admit') await engine.admit(sessionId, { prompt: `prompt for ${sessionId}`, delivery: o.delivery, wake: o.wake });
    // a session with no events yet has nothing to wake or cancel: not_found, and nothing is written
    const none = (err: unknown) => {
      if (!isSessiondError(err) || err.code !== ErrorCode.NotFound) throw err;
    };
    if (o.kind === 'wake') await engine.wake(sessionId).catch(none);
    if (o.kind === 'cancel') await engine.cancel(sessionId, 'from outside').catch(none);
    if (o.kind === 'recovery') await recoveryStream(log, sessionId, o);
    if (o.kind !== 'recovery') await engine.awaitIdle(sessionId);
  }
  for (let s = 0; s < 4; s++) await engine.awaitIdle(`ses_${s}`);
  const head = await log.head();
  await waitFor(() => errors.length > 0 || follower.checkpoint() >= head, { what: `the follower to reach ${head}` });
  await sub.close();
  assert.equal(errors, [], 'the follower applied every batch');
  const events = await log.readAll();
  for (const e of events) seen.set(e.type, (seen.get(e.type) ?? 0) + 1);

  // the exact committed batches, one transaction each, into a fresh database
  const batched = memoryDb();
  const p = new Projector(batched);
  for (const batch of log.batches) p.apply(batch);
  // a rebuild from the log into a fresh database, in small pages
  const rebuilt = memoryDb();
  const progress: [number, number][] = [];
  const result = await rebuildProjection(rebuilt, log, { pageSize: 7, onProgress: (done, total) => progress.push([done, total]) });
  assert.equal([result.events, result.position, result.pages], [events.length, head, Math.ceil(events.length / 7)]);
  assert.equal(progress.at(-1), [head, head]);
  assert.ok(
    progress.every(([d], i) => i === 0 || d > progress[i - 1]![0]),
    'progress only moves forward',
  );

  const expected = projectionRows(rebuilt);
  assert.equal(projectionRows(followerDb), expected, 'follower rows = rebuilt rows');
  assert.equal(projectionRows(batched), expected, 'committed-batch rows = rebuilt rows');
  const hash = projectionHash(rebuilt);
  assert.equal([projectionHash(followerDb), projectionHash(batched)], [hash, hash]);
  assert.equal(all(followerDb, 'projector_checkpoint'), [{ name: 'main', position: head }]);
  // rebuilding over an existing projection (in place) gives the same rows again
  await rebuildProjection(followerDb, log, { pageSize: 50 });
  assert.is(projectionHash(followerDb), hash);

  await engine.close();
  await followerLog.close();
  await log.close();
  followerDb.close();
  logDb.close();
  tmp.remove();
}

test('rebuild - a randomized workload: incremental rows and hash equal a rebuild from the log into a fresh database', async () => {
  await fc.assert(fc.asyncProperty(workload, runWorkload), { seed: 20_260_917, numRuns: 25, endOnFailure: true });
  for (const type of [
    'input.promoted',
    'text.completed',
    'tool.succeeded',
    'tool.failed',
    'compaction.completed',
    'execution.cancelled',
    'step.failed',
    'execution.settled',
    'recovery.completed',
    'recovery.wake_failed',
    'recovery.wake_delivered',
  ]) {
    assert.ok((seen.get(type) ?? 0) > 0, `the workload produced ${type} (seen: ${[...seen].map(([t, c]) => `${t}=${c}`).join(', ')})`);
  }
});

test('rebuild - replaces whatever the tables held, resets every checkpoint, and an empty log leaves an empty projection', async () => {
  const db = memoryDb();
  const s = stream();
  const stale = s.ev('ses_x', 'input.admitted', { inputId: 'inp_stale', prompt: 'old', delivery: 'queue', wake: true });
  new Projector(db).apply([stale]);
  new Projector(db, { name: 'other' }).apply([]);
  db.prepare("INSERT INTO projector_checkpoint (name, position) VALUES ('other', 99)").run();
  const empty = memoryDb();
  const progress: [number, number][] = [];
  const result = await rebuildProjection(db, new SqliteEventLog(empty), { onProgress: (d, t) => progress.push([d, t]) });
  assert.equal(result, { events: 0, position: 0, pages: 1 });
  assert.equal(progress, [[0, 0]]);
  assert.equal(projectionRows(db), EMPTY_PROJECTION);
  assert.equal(all(db, 'projector_checkpoint'), []);
});

test('rebuild - a bad page size is refused with the fix', async () => {
  const db = memoryDb();
  try {
    await rebuildProjection(db, new SqliteEventLog(memoryDb()), { pageSize: 0 });
    assert.unreachable('should refuse');
  } catch (err) {
    assert.match((err as Error).message, 'Invalid rebuild option pageSize=0: use a whole number of events >= 1 (default 1000).');
  }
});

test.run();
