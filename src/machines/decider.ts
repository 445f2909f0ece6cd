/**
 * The pure functions around the session machine: `hydrate` (fold a log into a snapshot), `evolve`
 * (fold one more committed event) and `decide` (what a command turns into, or why it is refused).
 * No I/O, no clock, no ids: the command handler stamps ids and times on the decided events.
 */
import { initialTransition, transition, type SnapshotFrom } from 'xstate';
import type { SessionEvent } from '../events/envelope.ts';
import { sessionMachine } from './session-machine.ts';
import type { Command, Decision, ProtoEvent, Refusal } from './commands.ts';

type Emitted = { type: 'decision'; events: ProtoEvent[] } | { type: 'refusal'; reason: Refusal; message: string };

export type SessionMachine = typeof sessionMachine;
export type SessionSnapshot = SnapshotFrom<SessionMachine>;
export type SessionStateValue = 'idle' | 'claimed' | 'running' | 'recovering' | 'settled';

export function initialSnapshot(sessionId: string, machine: SessionMachine = sessionMachine): SessionSnapshot {
  return initialTransition(machine, { sessionId })[0];
}

export function evolve(snapshot: SessionSnapshot, event: SessionEvent, machine: SessionMachine = sessionMachine): SessionSnapshot {
  if (event.seq !== snapshot.context.seq + 1) {
    throw new Error(`Session ${snapshot.context.sessionId}: event ${event.id} has seq ${event.seq}, expected ${snapshot.context.seq + 1}. Events must be folded in order, without gaps.`);
  }
  return transition(machine, snapshot, event)[0];
}

export function hydrate(sessionId: string, events: Iterable<SessionEvent>, machine: SessionMachine = sessionMachine): SessionSnapshot {
  let snapshot = initialSnapshot(sessionId, machine);
  for (const e of events) snapshot = evolve(snapshot, e, machine);
  return snapshot;
}

export function decide(snapshot: SessionSnapshot, command: Command, machine: SessionMachine = sessionMachine): Decision {
  const [, actions] = transition(machine, snapshot, command);
  for (const action of actions as { type: string; params?: unknown }[]) {
    if (action.type !== 'xstate.emit') continue;
    const emitted = (action.params as { event: Emitted }).event;
    if (emitted.type === 'decision') return { ok: true, events: emitted.events };
    return { ok: false, reason: emitted.reason, message: emitted.message };
  }
  throw new Error(`Session machine made no decision for command ${command.type} in state ${String(snapshot.value)}: every command needs a transition.`);
}

export function stateOf(snapshot: SessionSnapshot): SessionStateValue {
  return snapshot.value as SessionStateValue;
}
