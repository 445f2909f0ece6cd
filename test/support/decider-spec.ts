/**
 * Given / when / then over the real decider (as emmett's DeciderSpecification): given the events a
 * session has committed, when a command comes, then these events are decided, or it is refused.
 *
 *   const spec = deciderSpec('ses_1');
 *   spec.given([ev('input.admitted'), ev('execution.claimed', { expiresAt: 30_000 })])
 *     .when({ type: 'claim', now: 10, ownerId: 'own_b', executionId: 'exe_2', leaseMs: 30_000 })
 *     .thenRefused('lease_live', 'until 1970-01-01T00:00:30.000Z');
 *
 * `given` commits its events as a log would (seq from 1, payloads parsed with their schema, so
 * schema defaults apply); `then` asserts the decided events and returns the session with them
 * committed (at the command's `now`), so a spec goes on: `.then([...]).when(next).thenRefused(...)`;
 * its `snapshot` is the state for assertions of its own, its `events` the log so far.
 */
import * as assert from 'uvu/assert';
import { decide, evolve, initialSnapshot, stateOf, type SessionMachine, type SessionSnapshot } from '../../src/machines/decider.ts';
import { sessionMachine } from '../../src/machines/session-machine.ts';
import type { Command, Decision, ProtoEvent, Refusal } from '../../src/machines/commands.ts';
import { catalog } from '../../src/events/catalog.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { committed, type Proto } from '../../src/testing/fixtures.ts';

export interface Given {
  /** The session's state after its events. */
  readonly snapshot: SessionSnapshot;
  /** Its committed events, in order. */
  readonly events: readonly SessionEvent[];
  when(command: Command): When;
}

export interface When {
  /** What the decider said, for anything the assertions below do not cover. */
  readonly decision: Decision;
  /** Asserts the command is accepted with exactly `expected` (or passes them to an assertion) and commits them. */
  then(expected: readonly ProtoEvent[] | ((events: ProtoEvent[]) => void)): Given;
  /** Asserts the command is accepted, whatever it decides, and commits what it decided. */
  thenAccepted(): Given;
  /** Asserts the command is refused (for `reason`, with a message that includes `messageIncludes`); returns the message. */
  thenRefused(reason?: Refusal, messageIncludes?: string): string;
}

export function deciderSpec(sessionId = 'ses_1', machine: SessionMachine = sessionMachine) {
  return {
    /** A session that committed `events` (at `time`, default 0). */
    given(events: readonly Proto[] = [], options: { time?: number } = {}): Given {
      const parsed = events.map((e) => ({ type: e.type, payload: catalog[e.type].schema.parse(e.payload) }) as ProtoEvent);
      return session(commit(initialSnapshot(sessionId, machine), parsed, options.time ?? 0, machine), []);
    },
  };

  function session(at: { snapshot: SessionSnapshot; events: SessionEvent[] }, before: readonly SessionEvent[]): Given {
    const events = [...before, ...at.events];
    return {
      snapshot: at.snapshot,
      events,
      when(command) {
        const decision = decide(at.snapshot, command, machine);
        const accepted = (): ProtoEvent[] => {
          assert.ok(
            decision.ok,
            `${command.type} in state ${stateOf(at.snapshot)} was refused: ${decision.ok ? '' : `${decision.reason}: ${decision.message}`}`,
          );
          return decision.ok ? decision.events : [];
        };
        const next = (decided: ProtoEvent[]) => session(commit(at.snapshot, decided, command.now, machine), events);
        return {
          decision,
          then(expected) {
            const decided = accepted();
            if (typeof expected === 'function') expected(decided);
            else assert.equal(decided, expected, `the events ${command.type} decided`);
            return next(decided);
          },
          thenAccepted: () => next(accepted()),
          thenRefused(reason, messageIncludes) {
            assert.not.ok(decision.ok, `${command.type} in state ${stateOf(at.snapshot)} should be refused${reason ? ` (${reason})` : ''}, but was accepted`);
            if (decision.ok) return '';
            if (reason !== undefined) assert.is(decision.reason, reason, `${command.type} refused for ${decision.reason}, not ${reason}: ${decision.message}`);
            if (messageIncludes !== undefined) assert.match(decision.message, messageIncludes);
            return decision.message;
          },
        };
      },
    };
  }
}

/**
 * Folds decided events as if the log committed them (the next seqs of the snapshot's session, at
 * `time`): the snapshot after them, and the committed events.
 */
export function commit(
  snapshot: SessionSnapshot,
  decided: readonly ProtoEvent[],
  time: number,
  machine: SessionMachine = sessionMachine,
): { snapshot: SessionSnapshot; events: SessionEvent[] } {
  const events: SessionEvent[] = [];
  for (const p of decided) {
    const e = committed(p, { sessionId: snapshot.context.sessionId, seq: snapshot.context.seq + 1, time });
    snapshot = evolve(snapshot, e, machine);
    events.push(e);
  }
  return { snapshot, events };
}
