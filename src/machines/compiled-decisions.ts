/**
 * The machine's command transitions read once into a table of plain guard functions, so that a
 * decision is a lookup and a few calls instead of XState resolving a state and selecting a
 * transition (`resolveState` + `getTransitionData`, most of a decision's cost). It selects as XState
 * does: the state's own candidates for the command in order, then the root's, the first whose guard
 * passes (guards as `evaluateGuard` calls them: named with optional params, inline, `and`, `or`,
 * `not`). What it cannot read this way (a state with a wildcard transition, a `stateIn` guard, an
 * action other than one `decide` or `refuse`: the committed events' folds) is interpreted; `decide` is proven equal to the
 * interpreted machine by test/machines/fold-equivalence.test.ts.
 */
import { and, not, or } from 'xstate';
import { ErrorCode, SessiondError } from '../errors.ts';
import type { Command, Refusal } from './commands.ts';
import type { SessionContext } from './session-context.ts';

type Check = (context: SessionContext, command: Command) => boolean;

/** What a selected transition does: decide, or refuse with a reason. */
export type Choice = { decide: true } | { decide: false; reason: Refusal };

interface Candidate {
  check: Check | undefined;
  choice: Choice;
}

/** For each state and event type, the candidates in XState's order of selection (null: interpret it). */
export type DecisionTable = ReadonlyMap<string, ReadonlyMap<string, readonly Candidate[] | null> | null>;

/** What of an XState machine this reads (typed loosely: XState's own types are generic over the machine). */
interface MachineLike {
  root: { transitions: Map<string, TransitionLike[]> };
  states: Record<string, { transitions: Map<string, TransitionLike[]> }>;
  implementations: { guards: Record<string, unknown> };
}
interface TransitionLike {
  guard?: unknown;
  actions: readonly unknown[];
}

const NOT = (not(() => true) as unknown as { check: unknown }).check;
const AND = (and([() => true]) as unknown as { check: unknown }).check;
const OR = (or([() => true]) as unknown as { check: unknown }).check;

/** Thrown while compiling: the transition uses something the table does not model. */
class Unreadable extends SessiondError {
  constructor(what: string) {
    super(ErrorCode.Internal, `the decision table cannot read ${what}`);
    this.name = 'Unreadable';
  }
}

/** The decision table of `machine`: each state's command transitions, as plain functions where they can be. */
export function compileDecisions(machine: unknown): DecisionTable {
  const m = machine as MachineLike;
  const root = candidatesOf(m.root.transitions, m);
  const table = new Map<string, Map<string, Candidate[] | null> | null>();
  for (const [state, node] of Object.entries(m.states)) {
    const own = candidatesOf(node.transitions, m);
    if (own === null || root === null) {
      table.set(state, null); // a wildcard: any command may take it
      continue;
    }
    const byType = new Map<string, Candidate[] | null>();
    for (const type of new Set([...own.keys(), ...root.keys()])) {
      const mine = own.get(type) ?? [];
      const parent = root.get(type) ?? [];
      byType.set(type, mine === null || parent === null ? null : [...mine, ...parent]);
    }
    table.set(state, byType);
  }
  return table;
}

/**
 * What the machine does with `command` in `state`: the first candidate whose guard passes;
 * `interpret` when the table does not model it (or no candidate passes: the machine says why).
 */
export function choose(table: DecisionTable, state: string, context: SessionContext, command: Command): Choice | 'interpret' {
  const candidates = table.get(state)?.get(command.type);
  if (!candidates) return 'interpret';
  for (const c of candidates) if (!c.check || c.check(context, command)) return c.choice;
  return 'interpret';
}

/** Each event type's candidates (null where one is unreadable); null for the whole node when it has a wildcard. */
function candidatesOf(transitions: Map<string, TransitionLike[]>, m: MachineLike): Map<string, Candidate[] | null> | null {
  const out = new Map<string, Candidate[] | null>();
  for (const [type, list] of transitions) {
    if (type.includes('*')) return null;
    try {
      out.set(
        type,
        list.map((t) => ({ check: t.guard === undefined ? undefined : compileGuard(t.guard, m), choice: choiceOf(t.actions) })),
      );
    } catch (err) {
      if (!(err instanceof Unreadable)) throw err;
      out.set(type, null);
    }
  }
  return out;
}

function choiceOf(actions: readonly unknown[]): Choice {
  if (actions.length !== 1) throw new Unreadable('a transition with other than one action');
  const a = actions[0] as string | { type?: unknown; params?: { reason?: Refusal } };
  const type = typeof a === 'string' ? a : a.type;
  if (type === 'decide') return { decide: true };
  if (type === 'refuse' && typeof a === 'object' && a.params?.reason) return { decide: false, reason: a.params.reason };
  throw new Unreadable(`action ${String(type)}`);
}

/** A guard as XState's `evaluateGuard` evaluates it, as a plain function. */
function compileGuard(guard: unknown, m: MachineLike): Check {
  if (typeof guard === 'function') {
    const builtin = guard as unknown as { check?: unknown; guards?: unknown[] };
    if (!('check' in builtin)) {
      const inline = guard as (args: { context: SessionContext; event: Command }, params: undefined) => boolean;
      return (context, event) => inline({ context, event }, undefined);
    }
    const inner = (builtin.guards ?? []).map((g) => compileGuard(g, m));
    if (builtin.check === NOT && inner.length === 1) return (c, e) => !inner[0]!(c, e);
    if (builtin.check === AND) return (c, e) => inner.every((g) => g(c, e));
    if (builtin.check === OR) return (c, e) => inner.some((g) => g(c, e));
    throw new Unreadable('a built-in guard other than and, or, not');
  }
  const named = guard as string | { type: string; params?: unknown };
  const name = typeof named === 'string' ? named : named.type;
  const resolved = m.implementations.guards[name];
  if (resolved === undefined) throw new Unreadable(`guard ${name} is not implemented`);
  if (typeof resolved !== 'function') return compileGuard(resolved, m);
  if ('check' in (resolved as object)) return compileGuard(resolved, m);
  const fn = resolved as (args: { context: SessionContext; event: Command }, params: unknown) => boolean;
  const params = typeof named === 'string' || !('params' in named) ? undefined : named.params;
  if (typeof params === 'function') return (context, event) => fn({ context, event }, (params as (a: unknown) => unknown)({ context, event }));
  return (context, event) => fn({ context, event }, params);
}
