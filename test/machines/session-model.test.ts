/**
 * Model-based coverage: @xstate/graph explores every reachable state of "the machine deciding
 * commands from two owners, a user and a recovery sweep, while time moves", committing what it
 * decides. Every explored transition is checked against the invariants, restated here
 * independently of the guards. A second walk with a broken guard proves the checks can fail.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { emit, fromTransition } from 'xstate';
import { getShortestPaths } from '@xstate/graph';
import { decide, initialSnapshot, stateOf, type SessionSnapshot } from '../../src/machines/decider.ts';
import { decisionFor, sessionMachine } from '../../src/machines/session-machine.ts';
import type { Command } from '../../src/machines/commands.ts';
import { leaseLive } from '../../src/machines/session-context.ts';
import { commit } from '../support/decider-spec.ts';

const LEASE = 30_000;
const TICK = 15_000;
const MAX_TIME = 60_000;
const MAX_EXECUTIONS = 3;
const OWNERS = ['own_a', 'own_b'] as const;

type Step = { type: 'tick' } | { type: 'cmd'; who: string; command: string };
interface Model {
  snap: SessionSnapshot;
  now: number;
  /** The execution each owner last claimed (a zombie keeps using it). */
  mine: Record<string, string | undefined>;
  cancelled: string[];
  violations: string[];
}

function commandFor(m: Model, step: Step & { type: 'cmd' }): Command | undefined {
  const now = m.now;
  const ex = m.mine[step.who];
  const ctx = m.snap.context;
  switch (step.command) {
    case 'claim':
      return { type: 'claim', now, ownerId: step.who, executionId: `exe_${ctx.executions + 1}`, leaseMs: LEASE };
    case 'start':
      return ex ? { type: 'start', now, ownerId: step.who, executionId: ex } : undefined;
    case 'renew':
      return ex ? { type: 'renew', now, ownerId: step.who, executionId: ex } : undefined;
    case 'step':
      return ex
        ? {
            type: 'record',
            now,
            ownerId: step.who,
            executionId: ex,
            events: [{ type: 'step.started', payload: { executionId: ex, messageId: `msg_${ctx.seq}`, step: 0 } }],
          }
        : undefined;
    case 'settle':
      return ex ? { type: 'settle', now, ownerId: step.who, executionId: ex, outcome: 'succeeded' } : undefined;
    case 'cancel':
      return { type: 'cancel', now };
    case 'admit':
      return { type: 'admit', now, inputId: `inp_${ctx.seq}`, prompt: 'p', delivery: 'queue', wake: true };
    case 'recover':
      return { type: 'recover', now, continuationInputId: `inp_cont_${ctx.seq}` };
  }
  return undefined;
}

/** The invariants, stated from the outside: what an accepted command must never have done. */
function check(before: Model, command: Command, after: SessionSnapshot): string[] {
  const v: string[] = [];
  const prev = before.snap.context;
  const exec = prev.execution;
  const live = leaseLive(prev, command.now);
  const label = `${command.type} at ${command.now} in ${stateOf(before.snap)}`;
  switch (command.type) {
    case 'claim':
      if (live) v.push(`never starts a second owner while the lease is live: ${label}`);
      if (exec && exec.outcome === null && !['idle', 'settled'].includes(stateOf(before.snap))) v.push(`never overwrites an expired lease: ${label}`);
      if (after.context.execution!.assistantSeq !== prev.lastAssistantSeq) v.push(`claim must snapshot the latest assistant sequence: ${label}`);
      break;
    case 'renew':
      if (!exec || command.now >= exec.expiresAt) v.push(`never revives an expired claim on heartbeat: ${label}`);
      if (exec && exec.ownerId !== command.ownerId) v.push(`renewed someone else's lease: ${label}`);
      break;
    case 'settle':
      if (exec?.cancelled) v.push(`never lets runner settlement overwrite cancellation: ${label}`);
      if (!live) v.push(`settled without a live claim: ${label}`);
      break;
    case 'record':
    case 'start':
      if (!live || exec?.id !== command.executionId || exec.ownerId !== command.ownerId) v.push(`wrote without holding the claim: ${label}`);
      break;
    case 'recover':
      if (live) v.push(`never recovers a live execution lease: ${label}`);
      break;
  }
  for (const id of before.cancelled) {
    if (after.context.execution?.id === id && after.context.execution.outcome !== 'cancelled') v.push(`cancellation of ${id} was overwritten: ${label}`);
  }
  return v;
}

function modelLogic(machine = sessionMachine) {
  return fromTransition(
    (m: Model, step: Step): Model => {
      if (step.type === 'tick') return m.now + TICK > MAX_TIME ? m : { ...m, now: m.now + TICK };
      const command = commandFor(m, step);
      if (!command) return m;
      const d = decide(m.snap, command, machine);
      if (!d.ok) return m;
      const { snapshot: snap } = commit(m.snap, d.events, m.now, machine);
      const violations = [...m.violations, ...check(m, command, snap)];
      const mine = command.type === 'claim' ? { ...m.mine, [command.ownerId]: command.executionId } : m.mine;
      const cancelled = command.type === 'cancel' ? [...m.cancelled, snap.context.execution!.id] : m.cancelled;
      return { snap, now: m.now, mine, cancelled, violations };
    },
    { snap: initialSnapshot('ses_model', machine), now: 0, mine: {}, cancelled: [], violations: [] } as Model,
  );
}

const steps: Step[] = [
  { type: 'tick' },
  { type: 'cmd', who: 'user', command: 'admit' },
  { type: 'cmd', who: 'user', command: 'cancel' },
  { type: 'cmd', who: 'sweeper', command: 'recover' },
  ...OWNERS.flatMap((who) => ['claim', 'start', 'renew', 'step', 'settle'].map((command): Step => ({ type: 'cmd', who, command }))),
];

function key(m: Model): string {
  const c = m.snap.context;
  const e = c.execution;
  return JSON.stringify([
    stateOf(m.snap),
    m.now,
    e?.id,
    e?.ownerId,
    e ? e.expiresAt - m.now : null,
    e?.outcome,
    e?.started,
    c.pending.length > 0,
    c.lastAssistantSeq >= 0,
    m.mine,
    m.violations.length > 0,
  ]);
}

function explore(machine = sessionMachine) {
  const paths = getShortestPaths(modelLogic(machine), {
    events: () => steps,
    serializeState: (snap) => key(snap.context as Model),
    serializeEvent: (e) => JSON.stringify(e),
    stopWhen: (snap) => (snap.context as Model).snap.context.executions >= MAX_EXECUTIONS || (snap.context as Model).snap.context.pending.length > 2,
  });
  const violations = new Set<string>();
  let transitions = 0;
  for (const path of paths) {
    transitions += path.steps.length;
    for (const v of (path.state.context as Model).violations) violations.add(v);
  }
  return { paths, violations: [...violations], transitions };
}

test('model - invariants hold on every reachable state and transition', () => {
  const { paths, violations } = explore();
  assert.ok(paths.length > 200, `explored ${paths.length} states`);
  const states = new Set(paths.map((p) => stateOf((p.state.context as Model).snap)));
  assert.equal(
    [...states].sort(),
    ['claimed', 'idle', 'recovering', 'running', 'settled'].filter((s) => s !== 'recovering').sort(),
    'every state is reached (recovering is transient: recovered in one append)',
  );
  assert.equal(violations, []);
});

test('model - the walk catches a broken guard (the checks can fail)', () => {
  // mutant 1: claims go through whatever the guards say (the seed's original double-owner bug)
  const claimsAlways = sessionMachine.provide({
    actions: {
      refuse: emit(({ context, event }, params: { reason: string }) =>
        event.type === 'claim'
          ? { type: 'decision', events: decisionFor(context as never, event as Command) }
          : { type: 'refusal', reason: params.reason, message: 'refused' },
      ) as never,
    },
  });
  const { violations } = explore(claimsAlways);
  assert.ok(
    violations.some((v) => v.startsWith('never starts a second owner while the lease is live')),
    violations.slice(0, 3).join('\n'),
  );
  const zombie = sessionMachine.provide({
    guards: { holdsClaim: ({ context, event }) => context.execution?.id === (event as { executionId?: string }).executionId },
  });
  const z = explore(zombie);
  assert.ok(
    z.violations.some((v) => v.startsWith('never revives an expired claim on heartbeat')),
    z.violations.slice(0, 3).join('\n'),
  );
});

test.run();
