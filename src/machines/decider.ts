/**
 * The pure functions around the session machine: `hydrate` (fold a log into a snapshot), `evolve`
 * (fold one more event) and `decide` (a command's events or refusal). No I/O, clock or ids. Folds
 * through a transition table read from the machine; `evolveByMachine`/`decideByMachine` interpret it
 * and are proven equal. Why: docs/architecture.md#storage ("The fold").
 */
import { createActor, initialTransition, transition } from 'xstate';
import { ErrorCode, SessiondError } from '../errors.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { durableEventTypes, type EventType } from '../events/catalog.ts';
import { decisionFor, refusalMessages, sessionMachine, type Emitted } from './session-machine.ts';
import { foldContext, type SessionContext } from './session-context.ts';
import type { Command, Decision } from './commands.ts';
import { choose, compileDecisions, type DecisionTable } from './compiled-decisions.ts';

export type SessionMachine = typeof sessionMachine;
export type SessionStateValue = 'idle' | 'claimed' | 'running' | 'recovering' | 'settled';

/** A session's state: where it is in the machine, and what it knows. Plain data (safe to store). */
export interface SessionSnapshot {
  readonly value: SessionStateValue;
  readonly context: SessionContext;
}

const STATES: readonly SessionStateValue[] = ['idle', 'claimed', 'running', 'recovering', 'settled'];

/**
 * For each state and committed event type, the state the machine moves to (absent: it stays).
 * Read from the machine's transitions; a committed event must never be guarded (the log already
 * decided), which is checked here once.
 */
function eventTargets(machine: SessionMachine): Record<SessionStateValue, Partial<Record<EventType, SessionStateValue>>> {
  const out = {} as Record<SessionStateValue, Partial<Record<EventType, SessionStateValue>>>;
  for (const state of STATES) {
    const node = machine.states[state];
    if (!node) throw new SessiondError(ErrorCode.Internal, `The session machine has no state ${state}; update SessionStateValue.`);
    out[state] = {};
    for (const type of durableEventTypes) {
      const transitions = node.transitions.get(type) ?? machine.root.transitions.get(type) ?? [];
      if (transitions.length !== 1 || transitions[0]!.guard) {
        throw new SessiondError(
          ErrorCode.Internal,
          `The session machine's transition for committed event ${type} in state ${state} must be exactly one and unguarded: committed events are facts, not requests.`,
        );
      }
      const target = transitions[0]!.target?.[0]?.key as SessionStateValue | undefined;
      if (target && target !== state) out[state]![type] = target;
    }
  }
  return out;
}

const TARGETS = eventTargets(sessionMachine);

export function initialSnapshot(sessionId: string, machine: SessionMachine = sessionMachine): SessionSnapshot {
  const s = initialTransition(machine, { sessionId })[0];
  return { value: s.value as SessionStateValue, context: s.context };
}

function checkOrder(snapshot: SessionSnapshot, event: SessionEvent): void {
  if (event.seq !== snapshot.context.seq + 1) {
    throw new SessiondError(
      ErrorCode.InconsistentStream,
      `Session ${snapshot.context.sessionId}: event ${event.id} has seq ${event.seq}, expected ${snapshot.context.seq + 1}. Events must be folded in order, without gaps.`,
    );
  }
}

/** Folds one committed event: the hot path (no machine interpretation for the session machine). */
export function evolve(snapshot: SessionSnapshot, event: SessionEvent, machine: SessionMachine = sessionMachine): SessionSnapshot {
  if (machine !== sessionMachine) return evolveByMachine(snapshot, event, machine);
  checkOrder(snapshot, event);
  return { value: TARGETS[snapshot.value][event.type] ?? snapshot.value, context: foldContext(snapshot.context, event) };
}

/** Folds one committed event by running the machine (the reference `evolve` is proven equal to). */
export function evolveByMachine(snapshot: SessionSnapshot, event: SessionEvent, machine: SessionMachine = sessionMachine): SessionSnapshot {
  checkOrder(snapshot, event);
  const next = transition(machine, machine.resolveState({ value: snapshot.value, context: snapshot.context }), event)[0];
  return { value: next.value as SessionStateValue, context: next.context };
}

export function hydrate(sessionId: string, events: Iterable<SessionEvent>, machine: SessionMachine = sessionMachine): SessionSnapshot {
  let snapshot = initialSnapshot(sessionId, machine);
  for (const e of events) snapshot = evolve(snapshot, e, machine);
  return snapshot;
}

/**
 * What a command turns into, or why it is refused: the hot path. The machine's transitions, read
 * once into plain guard functions (compiled-decisions.ts), pick the transition; its one action,
 * `decide` or `refuse(reason)`, is then applied directly instead of XState resolving the state and
 * interpreting the machine's macrostep. `decideByMachine` is the reference it is proven equal to
 * (test/machines/fold-equivalence.test.ts); what the table does not model, or a machine whose
 * `decide`/`refuse` actions were replaced, goes there.
 */
export function decide(snapshot: SessionSnapshot, command: Command, machine: SessionMachine = sessionMachine): Decision {
  if (!ownActions(machine)) return decideByMachine(snapshot, command, machine);
  const choice = choose(tableOf(machine), snapshot.value, snapshot.context, command);
  if (choice === 'interpret') return decideByMachine(snapshot, command, machine);
  if (choice.decide) return { ok: true, events: decisionFor(snapshot.context, command) };
  return { ok: false, reason: choice.reason, message: refusalMessages[choice.reason]({ context: snapshot.context, event: command }) };
}

/** Each machine's decision table, read on its first decision (a machine given `.provide` guards is a machine of its own). */
const tables = new WeakMap<SessionMachine, DecisionTable>();
function tableOf(machine: SessionMachine): DecisionTable {
  let table = tables.get(machine);
  if (!table) {
    table = compileDecisions(machine);
    tables.set(machine, table);
  }
  return table;
}

const BASE_ACTIONS = sessionMachine.implementations.actions;
/** The machine decides and refuses with the session machine's own actions (a `.provide({ actions })` mutant is interpreted). */
function ownActions(machine: SessionMachine): boolean {
  const a = machine.implementations.actions;
  return machine === sessionMachine || (a['decide'] === BASE_ACTIONS['decide'] && a['refuse'] === BASE_ACTIONS['refuse']);
}

/**
 * Decides by running the machine in an actor and listening to what it emits (its typed `decision`
 * and `refusal` events): the reference `decide` is proven equal to, through XState's public API only.
 */
export function decideByMachine(snapshot: SessionSnapshot, command: Command, machine: SessionMachine = sessionMachine): Decision {
  const actor = createActor(machine, {
    snapshot: machine.resolveState({ value: snapshot.value, context: snapshot.context }),
    input: { sessionId: snapshot.context.sessionId },
  });
  let emitted: Emitted | undefined;
  actor.on('decision', (e) => {
    emitted = e;
  });
  actor.on('refusal', (e) => {
    emitted = e;
  });
  actor.start();
  actor.send(command);
  actor.stop();
  if (!emitted)
    throw new SessiondError(
      ErrorCode.Internal,
      `Session machine made no decision for command ${command.type} in state ${String(snapshot.value)}: every command needs a transition.`,
    );
  return emitted.type === 'decision' ? { ok: true, events: emitted.events } : { ok: false, reason: emitted.reason, message: emitted.message };
}

export function stateOf(snapshot: SessionSnapshot): SessionStateValue {
  return snapshot.value;
}
