/**
 * The hot-path fold (`evolve`: foldContext plus a transition table read from the machine) equals
 * the machine's own interpretation (`evolveByMachine`) on every sequence the machine can produce:
 * 2,000 random command sequences, each accepted decision's events folded both ways and compared
 * (state value and the whole context) after every event; and the log of a real engine's turns.
 * Likewise the hot-path `decide` (the machine's selected transition, its action applied directly)
 * equals `decideByMachine` (the machine interpreted) for every command of those sequences,
 * refusals and their messages included, with the real guards and with a provided one.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { compileDecisions } from '../../src/machines/compiled-decisions.ts';
import { durableEventTypes } from '../../src/events/catalog.ts';
import { decide, decideByMachine, evolve, evolveByMachine, hydrate, initialSnapshot, type SessionSnapshot } from '../../src/machines/decider.ts';
import { committed } from '../../src/testing/fixtures.ts';
import type { Command } from '../../src/machines/commands.ts';
import { sessionMachine } from '../../src/machines/session-machine.ts';
import { openEngine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { command } from '../support/arbitraries.ts';
import { tempDir } from '../support/tmp.ts';

/** A running turn first, so runner writes, cancels and recoveries get accepted too. */
const OPENING: Command[] = [
  { type: 'admit', now: 0, inputId: 'inp_1', prompt: 'p', delivery: 'queue', wake: true },
  { type: 'claim', now: 0, ownerId: 'own_1', executionId: 'exe_1', leaseMs: 30_000 },
  { type: 'start', now: 0, ownerId: 'own_1', executionId: 'exe_1' },
];

test('fold equivalence - 2,000 random command sequences fold to the same state and context both ways, after every event', () => {
  let folded = 0;
  const states = new Set<string>();
  fc.assert(
    fc.property(fc.array(command, { maxLength: 60 }), (commands) => {
      let fast: SessionSnapshot = initialSnapshot('ses_eq');
      let slow: SessionSnapshot = fast;
      for (const c of [...OPENING, ...commands]) {
        const d = decide(fast, c);
        if (!d.ok) continue;
        for (const p of d.events) {
          const e = committed(p, { sessionId: 'ses_eq', seq: fast.context.seq + 1, time: c.now });
          fast = evolve(fast, e);
          slow = evolveByMachine(slow, e);
          folded++;
          states.add(fast.value);
          if (fast.value !== slow.value) throw new Error(`after ${e.type}: state ${fast.value} (fast) vs ${slow.value} (machine)`);
          assert.equal(fast.context, slow.context, `context after ${e.type} at seq ${e.seq}`);
        }
      }
    }),
    { numRuns: 2_000, seed: 20261130 },
  );
  assert.equal([...states].sort(), ['claimed', 'idle', 'recovering', 'running', 'settled'], 'every state was reached');
  assert.ok(folded > 8_000, `events folded both ways: ${folded}`);
});

test('decide equivalence - 2,000 random command sequences: every command decided the same both ways (events or refusal and message)', () => {
  const reasons = new Set<string>();
  let decided = 0;
  // a provided guard is honoured by both (the model tests swap guards this way)
  const lenient = sessionMachine.provide({ guards: { leaseLive: () => false } });
  for (const machine of [sessionMachine, lenient]) {
    fc.assert(
      fc.property(fc.array(command, { maxLength: 60 }), (commands) => {
        let snap: SessionSnapshot = initialSnapshot('ses_eq');
        for (const c of [...OPENING, ...commands]) {
          const fast = decide(snap, c, machine);
          assert.equal(fast, decideByMachine(snap, c, machine), `${c.type} in ${snap.value}`);
          decided++;
          if (!fast.ok) {
            reasons.add(fast.reason);
            continue;
          }
          for (const p of fast.events) {
            snap = evolveByMachine(snap, committed(p, { sessionId: 'ses_eq', seq: snap.context.seq + 1, time: c.now }), machine);
          }
        }
      }),
      { numRuns: 1_000, seed: 20261130 },
    );
  }
  assert.ok(decided > 10_000, `commands decided both ways: ${decided}`);
  assert.ok(reasons.size >= 10, `refusal reasons seen: ${[...reasons].sort().join(', ')}`);
});

test("fold equivalence - a real engine's log hydrates to the same snapshot both ways", async () => {
  const tmp = tempDir();
  const engine = await openEngine({ file: tmp.file('eq.db'), runner: echoRunner({ steps: 3, overflowAtStep: 1 }) });
  for (const p of ['one two three', 'four five six']) await engine.admit('ses_real', { prompt: p });
  await engine.awaitIdle('ses_real');
  const events = await engine.log.readSession('ses_real');
  let slow = initialSnapshot('ses_real');
  for (const e of events) slow = evolveByMachine(slow, e);
  assert.equal(hydrate('ses_real', events), slow);
  await engine.close();
  tmp.remove();
});

test('decide equivalence - the decision table models every command of every state (none is left to the interpreter)', () => {
  const table = compileDecisions(sessionMachine);
  const durable = new Set<string>(durableEventTypes);
  const commands = new Set<string>();
  for (const [state, byType] of table) {
    assert.ok(byType, `state ${state} is read (no wildcard transition)`);
    for (const [type, candidates] of byType!) {
      if (durable.has(type) || type.startsWith('xstate.')) continue;
      commands.add(type);
      assert.ok(candidates && candidates.length > 0, `command ${type} in ${state} is decided from the table`);
    }
  }
  for (const type of ['claim', 'start', 'renew', 'record', 'settle', 'cancel', 'admit', 'fork', 'recover', 'resolve']) assert.ok(commands.has(type), type);
});

test.run();
