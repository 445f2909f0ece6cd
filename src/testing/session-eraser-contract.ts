/**
 * The SessionEraser contract (the deletion port), run on every log through the one delete flow
 * (`deleteSession`). `clock` is the suite's: the eraser must date its records with it.
 *
 *   sessionEraserContract('sqlite', async (clock) => ({ log, eraser, deletions, cleanup })).run();
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ManualClock, type Clock } from '../clock.ts';
import { ErrorCode, SessiondError } from '../errors.ts';
import type { EventLog } from '../events/event-log.ts';
import { CommandHandler } from '../execution/command-handler.ts';
import { randomIds } from '../ids.ts';
import { admitInput } from '../input/admit.ts';
import { deleteSession, type DeletionRecord } from '../sessions/delete.ts';
import type { SessionEraser } from '../sessions/session-eraser.ts';
import { unknownSession } from '../sessions/unknown-session.ts';
import { expectCode, uniqueId } from './fixtures.ts';

export interface SessionEraserFixture {
  /** The log the eraser deletes from. */
  log: EventLog;
  eraser: SessionEraser;
  /** Every deletion the log's audit recorded, in any order. */
  deletions: () => Promise<DeletionRecord[]>;
  cleanup: () => Promise<void>;
}

const NOW = 1_750_000_000_000;

export function sessionEraserContract(name: string, setup: (clock: Clock) => Promise<SessionEraserFixture>) {
  const s = suite<{ fx: SessionEraserFixture; clock: ManualClock; handler: CommandHandler }>(`SessionEraser contract (${name})`);
  s.before.each(async (ctx) => {
    ctx.clock = new ManualClock(NOW);
    ctx.fx = await setup(ctx.clock);
    ctx.handler = new CommandHandler(ctx.fx.log, ctx.clock, randomIds);
  });
  s.after.each(async (ctx) => {
    await ctx.fx.cleanup();
  });

  const recorded = async (fx: SessionEraserFixture, id: string) => (await fx.deletions()).filter((d) => d.sessionId === id);

  /** A session whose turn runs: an input admitted, claimed and started (as an owner does). */
  async function running(handler: CommandHandler, id: string): Promise<void> {
    await admitInput(handler, id, { id: 'inp_run', prompt: 'my secret address', wake: false });
    await handler.execute(id, (now) => ({ type: 'claim', now, ownerId: 'own_era', executionId: 'exe_era', leaseMs: 30_000 }));
    await handler.execute(id, (now) => ({ type: 'start', now, ownerId: 'own_era', executionId: 'exe_era' }));
  }

  s('session eraser - deleting removes the events and no other session; the record says who, why and how many', async ({ fx, clock, handler }) => {
    const [gone, kept] = [uniqueId('ses_gone'), uniqueId('ses_kept')];
    for (let i = 0; i < 3; i++) await admitInput(handler, gone, { id: `inp_${i}`, prompt: `secret ${i}`, wake: false });
    await admitInput(handler, kept, { id: 'inp_k', prompt: 'hello', wake: false });
    const events = await fx.log.lastSeq(gone);
    assert.ok(events >= 3, 'the session has its events');
    const keptBefore = await fx.log.readSession(kept);
    clock.set(NOW + 5_000);
    let cancelled = 0;
    const record = await deleteSession(
      handler,
      fx.eraser,
      gone,
      { by: 'dpo@example.com', reason: 'GDPR request 42', archivedTo: 'archive.sessiond' },
      async () => {
        cancelled++;
      },
    );
    const expected: DeletionRecord = {
      sessionId: gone,
      deletedAt: NOW + 5_000,
      deletedBy: 'dpo@example.com',
      reason: 'GDPR request 42',
      events,
      lastSeq: events,
      archivedTo: 'archive.sessiond',
    };
    assert.equal(pick(record), expected);
    assert.is(cancelled, 0, 'nothing ran: nothing was cancelled');
    assert.equal(await fx.log.readSession(gone), [], 'the events are gone');
    assert.is(await fx.log.lastSeq(gone), 0);
    assert.equal(await fx.log.readSession(kept), keptBefore, 'the other session is untouched');
    assert.equal((await recorded(fx, gone)).map(pick), [expected], 'the audit recorded it once');
    assert.not.match(JSON.stringify(await fx.deletions()), 'secret', 'the audit holds no content');
    assert.is((await handler.load(gone)).context.seq, 0, 'the cached state is forgotten');
  });

  s('session eraser - an unknown session is refused with the same error, and nothing is recorded', async ({ fx, handler }) => {
    const never = uniqueId('ses_never');
    const err = await expectCode(deleteSession(handler, fx.eraser, never, { by: 'dpo' }), ErrorCode.NotFound);
    assert.is(err.message, unknownSession(never, 'delete').message);
    assert.equal(await recorded(fx, never), []);
    // a session deleted already is unknown too
    const once = uniqueId('ses_once');
    await admitInput(handler, once, { id: 'inp_1', prompt: 'p', wake: false });
    await deleteSession(handler, fx.eraser, once, { by: 'dpo' });
    const again = await expectCode(deleteSession(handler, fx.eraser, once, { by: 'dpo' }), ErrorCode.NotFound);
    assert.is(again.message, unknownSession(once, 'delete').message);
    assert.is((await recorded(fx, once)).length, 1, 'recorded once');
  });

  s('session eraser - deleting while a turn runs cancels it first, by who deletes and why', async ({ fx, handler }) => {
    const id = uniqueId('ses_busy');
    await running(handler, id);
    let atCancel: { type: string; payload: unknown }[] = [];
    const record = await deleteSession(handler, fx.eraser, id, { by: 'dpo@example.com', reason: 'stop' }, async () => {
      atCancel = (await fx.log.readSession(id)).map((e) => ({ type: e.type, payload: e.payload }));
    });
    assert.equal(atCancel.at(-1), {
      type: 'execution.cancelled',
      payload: { executionId: 'exe_era', reason: 'the session is being deleted: stop', actor: 'dpo@example.com' },
    });
    assert.is(record.events, atCancel.length, 'the cancel is counted: it was in the log before the erase');
    assert.equal(await fx.log.readSession(id), [], 'the events are gone');
  });

  s('session eraser - a refused check cancels nothing and erases nothing', async ({ fx, handler }) => {
    const id = uniqueId('ses_kept');
    await running(handler, id);
    const before = await fx.log.readSession(id);
    const refusing: SessionEraser = {
      check: async () => {
        throw new SessiondError(ErrorCode.InvalidOption, 'this log cannot delete');
      },
      erase: (sid, erasure) => fx.eraser.erase(sid, erasure),
    };
    await expectCode(deleteSession(handler, refusing, id, { by: 'dpo' }), ErrorCode.InvalidOption, 'this log cannot delete');
    await expectCode(deleteSession(handler, fx.eraser, id, { by: '' }), ErrorCode.InvalidOption, 'Invalid delete option by');
    assert.equal(await fx.log.readSession(id), before, 'the turn still runs');
    assert.equal(await recorded(fx, id), []);
  });

  return s;
}

/** The fields every log's record has (NATS adds its own). */
function pick(r: DeletionRecord): DeletionRecord {
  const { sessionId, deletedAt, deletedBy, reason, events, lastSeq, archivedTo } = r;
  return { sessionId, deletedAt, deletedBy, reason, events, lastSeq, archivedTo };
}
