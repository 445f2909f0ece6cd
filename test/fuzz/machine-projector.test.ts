/**
 * Fuzzing the machine and the projector (fast-check, fixed seeds, bounded runs).
 *
 * - The machine: random command sequences (random kinds, owners, execution ids, times, runner
 *   events) are decided and the accepted ones folded: deciding never throws, and the folded state
 *   never has two owners (a claim is accepted only when no execution is in progress).
 * - The projector: random and adversarial event sequences (unknown ids, events of executions that
 *   were never claimed, double promotions, out-of-order positions) applied in random batches: each
 *   batch is applied whole or refused with a SessiondError, and a refused batch leaves the tables
 *   exactly as they were (never a half-applied transaction).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { decide, initialSnapshot, stateOf } from '../../src/machines/decider.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { SessiondError } from '../../src/errors.ts';
import { projectionHash } from '../../src/projector/rebuild.ts';
import { setup } from '../projector/support.ts';
import { commit } from '../support/decider-spec.ts';
import { stream } from '../../src/testing/fixtures.ts';
import { command, ids, now, protoEvent } from '../support/arbitraries.ts';

const SEED = 20261130;

test('fuzz - the machine decides 1,000 random sequences of up to 40 commands without throwing, and never accepts a second owner', () => {
  let accepted = 0;
  fc.assert(
    fc.property(fc.array(command, { maxLength: 40 }), (commands) => {
      let snap = initialSnapshot('ses_fz');
      for (const c of commands) {
        const inProgress = stateOf(snap) === 'claimed' || stateOf(snap) === 'running';
        const d = decide(snap, c);
        if (!d.ok) continue;
        accepted++;
        if (c.type === 'claim' && inProgress) throw new Error(`a claim was accepted while execution ${snap.context.execution?.id} was in progress`);
        snap = commit(snap, d.events, c.now).snapshot;
      }
    }),
    { numRuns: 1_000, seed: SEED },
  );
  assert.ok(accepted > 300, `the generator reaches accepted commands too (${accepted})`);
});

const sessionEvent = (sessionIds: string[]) =>
  fc.tuple(
    fc.constantFrom(...sessionIds),
    fc.oneof(
      protoEvent,
      fc.record({
        type: fc.constant('execution.claimed' as const),
        payload: fc.record({ executionId: ids('exe'), ownerId: ids('own'), expiresAt: now, leaseMs: fc.constant(30_000), assistantSeq: fc.constant(-1) }),
      }),
      fc.record({
        type: fc.constant('execution.settled' as const),
        payload: fc.record({ executionId: ids('exe'), outcome: fc.constantFrom('succeeded' as const, 'failed' as const) }),
      }),
      fc.record({
        type: fc.constant('input.admitted' as const),
        payload: fc.record({ inputId: ids('inp'), prompt: fc.string(), delivery: fc.constant('queue' as const), wake: fc.boolean() }),
      }),
      fc.record({
        type: fc.constant('recovery.completed' as const),
        payload: fc.record({
          executionId: ids('exe'),
          assistantMessageId: fc.constant(null),
          continuationInputId: fc.option(ids('inp_cont'), { nil: null }),
          phase: fc.constant('safe' as const),
        }),
      }),
      fc.record({ type: fc.constant('recovery.wake_delivered' as const), payload: fc.record({ executionId: ids('exe'), byExecutionId: ids('exe') }) }),
    ),
  );

test('fuzz - the projector applies 500 random event streams in random batches: each batch whole or refused with a SessiondError, never half-applied', () => {
  let refused = 0;
  let applied = 0;
  fc.assert(
    fc.property(
      fc.array(sessionEvent(['ses_a', 'ses_b']), { maxLength: 30 }),
      fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 10 }),
      fc.boolean(),
      (raw, cuts, shuffle) => {
        const { db, projector } = setup();
        const s = stream();
        let events: SessionEvent[] = raw.map(([sessionId, p], i) => s.commit(sessionId, p, { id: `evt_${i}` }));
        if (shuffle && events.length > 2) events = [events[1]!, events[0]!, ...events.slice(2)]; // an out-of-order pair
        for (let at = 0, k = 0; at < events.length; k++) {
          const batch = events.slice(at, at + cuts[k % cuts.length]!);
          at += batch.length;
          const before = projectionHash(db);
          try {
            projector.apply(batch);
            applied++;
          } catch (err) {
            if (!(err instanceof SessiondError)) throw new Error(`threw ${String(err)}, not a SessiondError`);
            refused++;
            if (projectionHash(db) !== before) throw new Error(`a refused batch changed the tables: ${err.message}`);
            break; // a follower stops at a refused batch
          }
        }
        db.close();
      },
    ),
    { numRuns: 500, seed: SEED },
  );
  assert.ok(refused > 50 && applied > 20, `both outcomes are reached (${applied} applied, ${refused} refused)`);
});

test.run();
