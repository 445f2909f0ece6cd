/**
 * Model-based coverage: a breadth-first walk (test/support/model-walk.ts) explores every reachable state of "the machine deciding
 * commands from two owners, a user and a recovery sweep, while time moves", committing what it
 * decides. Every explored transition is checked against the invariants, restated here
 * independently of the guards. A second walk with a broken guard proves the checks can fail.
 *
 * A coverage walk sends every command of the machine, from every kind of caller (duplicate and
 * limited admissions, cancels naming another execution, promotions once and twice, engine events
 * from a runner, failed and handed-back settlements, wakes owed and not, a stranger's execution),
 * and records the branch each decision takes: every (state, command, branch) of the machine is
 * reached, or listed in UNREACHABLE with the reason no commands can reach it. A new branch fails
 * the test until it is walked or listed.
 */
import { MAX_TAGS } from '../../src/events/tags.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { emit } from 'xstate';
import { decide, initialSnapshot, stateOf, type SessionSnapshot } from '../../src/machines/decider.ts';
import { decisionFor, sessionMachine } from '../../src/machines/session-machine.ts';
import type { Command, ProtoEvent } from '../../src/machines/commands.ts';
import { leaseLive } from '../../src/machines/session-context.ts';
import { commit } from '../support/decider-spec.ts';
import { walkModel } from '../support/model-walk.ts';

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

/** An execution id that never existed: a stranger's (or another session's) commands name it. */
const GHOST = 'exe_ghost';

function commandFor(m: Model, step: Step & { type: 'cmd' }): Command | undefined {
  const now = m.now;
  const ex = step.who === 'stranger' ? GHOST : m.mine[step.who];
  const ctx = m.snap.context;
  const firstPending = ctx.pending[0]?.inputId;
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
    case 'promote':
    case 'promote twice': {
      if (!ex || !firstPending) return undefined;
      const promoted: ProtoEvent = { type: 'input.promoted', payload: { inputId: firstPending, executionId: ex } };
      return { type: 'record', now, ownerId: step.who, executionId: ex, events: step.command === 'promote' ? [promoted] : [promoted, promoted] };
    }
    case 'record engine event':
      return ex
        ? { type: 'record', now, ownerId: step.who, executionId: ex, events: [{ type: 'execution.cancelled', payload: { executionId: ex } }] }
        : undefined;
    case 'settle':
      return ex ? { type: 'settle', now, ownerId: step.who, executionId: ex, outcome: 'succeeded' } : undefined;
    case 'settle failed':
      return ex
        ? { type: 'settle', now, ownerId: step.who, executionId: ex, outcome: 'failed', error: { type: 'unknown', message: 'the model failed' } }
        : undefined;
    case 'hand back':
    case 'hand back again': {
      const continuationInputId = step.command === 'hand back' ? `inp_handback_${ex}` : ctx.admitted.at(-1)?.[0];
      return ex && continuationInputId ? { type: 'settle', now, ownerId: step.who, executionId: ex, outcome: 'released', continuationInputId } : undefined;
    }
    case 'cancel':
      return { type: 'cancel', now };
    case 'cancel another':
      return { type: 'cancel', now, executionId: 'exe_other' };
    case 'admit':
      return { type: 'admit', now, inputId: `inp_${ctx.seq}`, prompt: 'p', delivery: 'queue', wake: true };
    case 'admit again': {
      const last = ctx.admitted.at(-1)?.[0];
      return last ? { type: 'admit', now, inputId: last, prompt: 'p', delivery: 'queue', wake: true } : undefined;
    }
    case 'admit past limits':
      return {
        type: 'admit',
        now,
        inputId: `inp_l${ctx.seq}`,
        prompt: 'p',
        delivery: 'queue',
        wake: true,
        limits: { maxPendingInputs: 1, maxPendingBytes: 1_000 },
      };
    case 'admit past tag limit':
      return { type: 'admit', now, inputId: `inp_t${ctx.seq}`, prompt: 'p', delivery: 'queue', wake: true, tags: manyTags };
    case 'admit as acme':
    case 'admit as globex':
      return { type: 'admit', now, inputId: `inp_o${ctx.seq}`, prompt: 'p', delivery: 'queue', wake: true, owner: step.command.slice(9) };
    case 'tag':
      return { type: 'tag', now, tags: { step: String(ctx.seq) } };
    case 'tag again': // what it has already (or removing a tag it lacks): nothing changes
      return { type: 'tag', now, tags: Object.keys(ctx.tags).length > 0 ? { ...ctx.tags } : { absent: null } };
    case 'tag past limit':
      return { type: 'tag', now, tags: manyTags };
    case 'drop pending':
      return { type: 'dropPending', now };
    case 'recover':
      return { type: 'recover', now, continuationInputId: `inp_cont_${ctx.seq}` };
    case 'recover again': {
      // a continuation id that is already admitted (a recovery decided twice)
      const again = ctx.admitted.at(-1)?.[0];
      return again ? { type: 'recover', now, continuationInputId: again } : undefined;
    }
    case 'ask approval':
      return ex ? { type: 'record', now, ownerId: step.who, executionId: ex, events: [waitStarted(ex, 'approval', 'call_1')] } : undefined;
    case 'sleep':
      return ex ? { type: 'record', now, ownerId: step.who, executionId: ex, events: [waitStarted(ex, 'timer', 'sleep-1', now + TICK)] } : undefined;
    case 'settle waiting':
      return ex ? { type: 'settle', now, ownerId: step.who, executionId: ex, outcome: 'waiting' } : undefined;
    case 'run approved call':
      return ex
        ? {
            type: 'record',
            now,
            ownerId: step.who,
            executionId: ex,
            events: [{ type: 'tool.started', payload: { executionId: ex, messageId: 'msg_w', callId: 'call_1' } }],
          }
        : undefined;
    case 'approve':
    case 'deny':
    case 'approve wrongly':
    case 'approve unknown':
      return {
        type: 'resolve',
        now,
        kind: 'approval',
        name: step.command === 'approve unknown' ? 'call_9' : 'call_1',
        outcome: step.command === 'deny' ? 'denied' : step.command === 'approve wrongly' ? 'elapsed' : 'approved',
        continuationInputId: `inp_resume_${ctx.seq}`,
      };
    case 'approve again':
      return { type: 'resolve', now, kind: 'approval', name: 'call_1', outcome: 'approved', continuationInputId: ctx.admitted.at(-1)?.[0] ?? 'inp_none' };
    case 'elapse':
      return { type: 'resolve', now, kind: 'timer', name: 'sleep-1', outcome: 'elapsed', continuationInputId: `inp_resume_${ctx.seq}` };
    case 'request wake':
      return { type: 'requestWake', now };
    case 'fail wake':
    case 'park':
      return { type: 'failWake', now, error: { type: 'wake', message: 'no worker answered' }, park: step.command === 'park' };
  }
  return undefined;
}

const waitStarted = (executionId: string, kind: 'approval' | 'timer', name: string, until?: number): ProtoEvent => ({
  type: 'wait.started',
  payload: { executionId, kind, name, ...(kind === 'approval' ? { messageId: 'msg_w', callId: name, tool: 'send_mail' } : { until }) },
});

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
      if (prev.waits.some((w) => w.outcome === null) && stateOf(before.snap) === 'settled') v.push(`ran something while the turn waits: ${label}`);
      if (after.context.execution!.assistantSeq !== prev.lastAssistantSeq) v.push(`claim must snapshot the latest assistant sequence: ${label}`);
      break;
    case 'renew':
      if (!exec || command.now >= exec.expiresAt) v.push(`never revives an expired claim on heartbeat: ${label}`);
      if (exec && exec.ownerId !== command.ownerId) v.push(`renewed someone else's lease: ${label}`);
      break;
    case 'settle':
      if (exec?.cancelled) v.push(`never lets runner settlement overwrite cancellation: ${label}`);
      if (!live) v.push(`settled without a live claim: ${label}`);
      if (command.outcome === 'released' && prev.admitted.some(([id]) => id === command.continuationInputId)) v.push(`never admits an input twice: ${label}`);
      break;
    case 'record':
    case 'start':
      if (!live || exec?.id !== command.executionId || exec.ownerId !== command.ownerId) v.push(`wrote without holding the claim: ${label}`);
      if (command.type === 'record') {
        const ids = command.events.flatMap((e) => (e.type === 'input.promoted' ? [e.payload.inputId] : []));
        if (ids.some((id, i) => ids.indexOf(id) !== i || !prev.pending.some((p) => p.inputId === id)))
          v.push(`promotes an input exactly once, and only a pending one: ${label}`);
        if (command.events.some((e) => !['step.started', 'input.promoted', 'wait.started', 'tool.started'].includes(e.type)))
          v.push(`a runner wrote an engine event: ${label}`);
        for (const e of command.events) {
          if (e.type !== 'tool.started') continue;
          const w = prev.waits.find((x) => x.kind === 'approval' && x.callId === e.payload.callId);
          if (w && w.outcome !== 'approved') v.push(`never runs a tool a person denied: ${label}`);
          if (w?.started) v.push(`never runs an approved call twice: ${label}`);
        }
      }
      break;
    case 'recover':
      if (live) v.push(`never recovers a live execution lease: ${label}`);
      if (prev.admitted.some(([id]) => id === command.continuationInputId)) v.push(`never admits an input twice: ${label}`);
      break;
    case 'admit':
      if (prev.admitted.some(([id]) => id === command.inputId)) v.push(`admitted input ${command.inputId} twice: ${label}`);
      if (command.owner !== undefined && prev.ownedBy !== null && prev.ownedBy !== command.owner) v.push(`admitted into another owner's session: ${label}`);
      if (command.limits && prev.pending.length + 1 > command.limits.maxPendingInputs) v.push(`admitted past the pending limit: ${label}`);
      break;
    case 'cancel':
      if (command.executionId !== undefined && command.executionId !== exec?.id)
        v.push(`a cancel of ${command.executionId} stopped another execution: ${label}`);
      break;
    case 'resolve': {
      const w = prev.waits.find((x) => x.kind === command.kind && x.name === command.name);
      if (!w || w.outcome !== null) v.push(`resolved a wait that is not open: ${label}`);
      if (command.outcome === 'elapsed' && (w?.until == null || command.now < w.until)) v.push(`never wakes a timer early: ${label}`);
      if (prev.admitted.some(([id]) => id === command.continuationInputId)) v.push(`never admits an input twice: ${label}`);
      break;
    }
    case 'requestWake':
    case 'failWake':
      if (!prev.recovery?.wakePending || prev.recovery.parked) v.push(`counted a wake that is not owed: ${label}`);
      break;
  }
  for (const id of before.cancelled) {
    if (after.context.execution?.id === id && after.context.execution.outcome !== 'cancelled') v.push(`cancellation of ${id} was overwritten: ${label}`);
  }
  return v;
}

function modelStep(machine = sessionMachine, fired?: Set<string>) {
  return (m: Model, step: Step): Model => {
    if (step.type === 'tick') return m.now + TICK > MAX_TIME ? m : { ...m, now: m.now + TICK };
    const command = commandFor(m, step);
    if (!command) return m;
    fired?.add(firedTriple(m.snap, command, machine));
    const d = decide(m.snap, command, machine);
    if (!d.ok) return m;
    const { snapshot: snap } = commit(m.snap, d.events, m.now, machine);
    const violations = [...m.violations, ...check(m, command, snap)];
    const mine = command.type === 'claim' ? { ...m.mine, [command.ownerId]: command.executionId } : m.mine;
    // (a cancel of a waiting turn ends its waits; its execution had settled waiting)
    const cancelled = command.type === 'cancel' && snap.context.execution!.cancelled ? [...m.cancelled, snap.context.execution!.id] : m.cancelled;
    return { snap, now: m.now, mine, cancelled, violations };
  };
}

const initialModel = (machine = sessionMachine): Model => ({ snap: initialSnapshot('ses_model', machine), now: 0, mine: {}, cancelled: [], violations: [] });

/** One tag more than a session may carry. */
const manyTags = Object.fromEntries(Array.from({ length: MAX_TAGS + 1 }, (_, i) => [`k${i}`, 'v']));

const OWNER_COMMANDS = ['claim', 'start', 'renew', 'step', 'settle'];
/** What only the coverage walk adds (the invariants walk stays small enough to run in seconds). */
const MORE_OWNER_COMMANDS = ['promote', 'promote twice', 'record engine event', 'settle failed', 'hand back', 'hand back again'];
const cmd =
  (who: string) =>
  (command: string): Step => ({ type: 'cmd', who, command });

const steps: Step[] = [
  { type: 'tick' },
  { type: 'cmd', who: 'user', command: 'admit' },
  { type: 'cmd', who: 'user', command: 'cancel' },
  { type: 'cmd', who: 'sweeper', command: 'recover' },
  ...OWNERS.flatMap((who) => OWNER_COMMANDS.map(cmd(who))),
];

/** Every command of the machine, from every kind of caller, for the coverage walk. */
const allSteps: Step[] = [
  ...steps,
  ...[
    'admit again',
    'admit past limits',
    'cancel another',
    'drop pending',
    'admit past tag limit',
    'tag',
    'tag again',
    'tag past limit',
    'admit as acme',
    'admit as globex',
  ].map(cmd('user')),
  ...['recover again', 'request wake', 'fail wake', 'park'].map(cmd('sweeper')),
  ...MORE_OWNER_COMMANDS.map(cmd(OWNERS[0])),
  ...['start', 'renew', 'step', 'settle'].map(cmd('stranger')),
];

/** A turn that waits: an approval (asked, decided, run) and a timer, for the waits walk. */
const waitSteps: Step[] = [
  { type: 'tick' },
  ...['admit', 'cancel', 'approve', 'deny', 'approve wrongly', 'approve unknown', 'approve again'].map(cmd('user')),
  ...['recover', 'elapse'].map(cmd('sweeper')),
  ...['claim', 'start', 'settle', 'settle failed', 'ask approval', 'sleep', 'settle waiting', 'run approved call'].map(cmd(OWNERS[0])),
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
    // what the coverage walk's branches depend on besides
    e?.cancelled,
    c.pending.map((p) => p.source),
    c.admitted.length > 0,
    c.ownedBy,
    c.recovery && [c.recovery.wakePending, c.recovery.parked],
    c.waits.map((w) => [w.kind, w.outcome, w.started, w.until === null ? null : w.until - m.now]),
  ]);
}

function explore(machine = sessionMachine, events: Step[] = steps, fired?: Set<string>, maxExecutions = MAX_EXECUTIONS, maxPending = 2) {
  const { states, transitions } = walkModel(initialModel(machine), modelStep(machine, fired), {
    events,
    key,
    stopWhen: (m) => m.snap.context.executions >= maxExecutions || m.snap.context.pending.length > maxPending,
  });
  const violations = new Set(states.flatMap((m) => m.violations));
  return { states, violations: [...violations], transitions };
}

// ------------------------------------------------------------------------------------ branch coverage

const STATES = ['idle', 'claimed', 'running', 'recovering', 'settled'] as const;
const COMMANDS: readonly Command['type'][] = [
  'claim',
  'start',
  'renew',
  'record',
  'settle',
  'cancel',
  'admit',
  'dropPending',
  'recover',
  'requestWake',
  'failWake',
  'resolve',
];

type Transition = NonNullable<ReturnType<typeof sessionMachine.root.transitions.get>>[number];

/** The candidate transitions of a command in a state: the state's own, else the root's fallbacks. */
function candidates(state: string, command: string, machine = sessionMachine): readonly Transition[] {
  return machine.states[state]!.transitions.get(command) ?? machine.root.transitions.get(command) ?? [];
}

function describeBranch(state: string, command: string, t: Transition, i: number): string {
  const guard = t.guard === undefined ? 'otherwise' : typeof t.guard === 'string' ? t.guard : guardName(t.guard);
  const action = t.actions[0] as { type?: string; params?: { reason?: string } } | string;
  const does = typeof action === 'string' ? action : action.params?.reason ? `refuse ${action.params.reason}` : action.type;
  return `${state} / ${command} #${i} (${guard} -> ${does})`;
}

function guardName(g: unknown): string {
  const o = g as { type?: string; params?: unknown; guards?: unknown[] } & ((...a: unknown[]) => unknown);
  // xstate's and()/not() guards are functions carrying their parts
  const parts = (o as { guards?: unknown[] }).guards;
  const inner = (o as { guard?: unknown }).guard;
  if (Array.isArray(parts)) return `and(${parts.map(guardName).join(', ')})`;
  if (inner !== undefined) return `not(${guardName(inner)})`;
  return typeof g === 'string' ? g : String(o.type ?? o.name ?? 'guard');
}

/** Every (state, command, branch) of the machine. */
function allTriples(machine = sessionMachine): string[] {
  return STATES.flatMap((state) => COMMANDS.flatMap((command) => candidates(state, command, machine).map((t, i) => describeBranch(state, command, t, i))));
}

/** The branch the machine takes for `command` in this snapshot. */
function firedTriple(snap: SessionSnapshot, command: Command, machine = sessionMachine): string {
  const chosen = machine.getTransitionData(machine.resolveState({ value: snap.value, context: snap.context }), command);
  const list = candidates(snap.value, command.type, machine);
  const i = list.indexOf(chosen[0] as Transition);
  return describeBranch(snap.value, command.type, list[i]!, i);
}

/**
 * The branches no sequence of commands can take, each with the reason. A branch the walk does not
 * reach must be here, and one listed here must not be reached: when the machine changes, this list
 * is reviewed with it.
 */
const NEVER_CANCELLED =
  'a cancel moves the session to settled, so in idle (no execution yet, or a recovered one) and in claimed the current execution is never a cancelled one';
const NO_WAKE_OWED =
  'only a recovery owes a wake, and it ends in idle; the next claim delivers it (recovery.wake_delivered), so no wake is owed in claimed, running or settled';
const UNREACHABLE: Record<string, string> = {
  'recovering / *': 'recovering is transient: recovery.started and recovery.completed are committed in one append, so no command is ever decided in it',
  'idle / renew #0 (and(isCurrentExecution, cancelled) -> refuse cancelled)': NEVER_CANCELLED,
  'idle / record #0 (and(isCurrentExecution, cancelled) -> refuse cancelled)': NEVER_CANCELLED,
  'idle / settle #0 (cancelled -> refuse cancelled)': NEVER_CANCELLED,
  'claimed / record #0 (and(isCurrentExecution, cancelled) -> refuse cancelled)': NEVER_CANCELLED,
  'claimed / requestWake #0 (wakePending -> decide)': NO_WAKE_OWED,
  'claimed / failWake #0 (wakePending -> decide)': NO_WAKE_OWED,
  'running / requestWake #0 (wakePending -> decide)': NO_WAKE_OWED,
  'running / failWake #0 (wakePending -> decide)': NO_WAKE_OWED,
  'settled / requestWake #0 (wakePending -> decide)': NO_WAKE_OWED,
  'settled / failWake #0 (wakePending -> decide)': NO_WAKE_OWED,
};

function unreachableReason(triple: string): string | undefined {
  return UNREACHABLE[triple] ?? UNREACHABLE[`${triple.split(' / ')[0]} / *`];
}

test('model - the coverage walk takes every branch of the machine that any commands can reach; the others are listed with the reason', () => {
  const fired = new Set<string>();
  const { violations, states } = explore(sessionMachine, allSteps, fired, 2);
  // (a resumed turn that is recovered holds its input, the resume and the recovery's continuation: three pending)
  const waited = explore(sessionMachine, waitSteps, fired, 3, 3);
  assert.equal([...violations, ...waited.violations], []);
  const all = allTriples();
  const missed = all.filter((t) => !fired.has(t) && !unreachableReason(t));
  const listedButReached = all.filter((t) => fired.has(t) && unreachableReason(t));
  assert.equal(missed, [], `branches neither reached nor listed as unreachable (${fired.size} of ${all.length} reached, ${states.length} states)`);
  assert.equal(listedButReached, [], 'listed as unreachable, but reached: take them off the list');
});

test('model - invariants hold on every reachable state and transition', () => {
  const { states, violations } = explore();
  assert.ok(states.length > 200, `explored ${states.length} states`);
  const reached = new Set(states.map((m) => stateOf(m.snap)));
  assert.equal(
    [...reached].sort(),
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
  // mutant 3: promotions unchecked (found by the coverage walk's commands)
  const promotesAnything = sessionMachine.provide({ guards: { promotesOnlyPending: () => true } });
  const p = explore(promotesAnything, allSteps, undefined, 2);
  assert.ok(
    p.violations.some((v) => v.startsWith('promotes an input exactly once')),
    p.violations.slice(0, 3).join('\n'),
  );
  // mutants 4 and 5: a timer woken early, a denied (or already run) call started (found by the waits walk)
  const early = explore(sessionMachine.provide({ guards: { waitNotDue: () => false } }), waitSteps, undefined, 2, 3);
  assert.ok(
    early.violations.some((v) => v.startsWith('never wakes a timer early')),
    early.violations.slice(0, 3).join('\n'),
  );
  const runsAnything = explore(sessionMachine.provide({ guards: { startsOnlyApprovedCalls: () => true } }), waitSteps, undefined, 3, 3);
  assert.ok(
    runsAnything.violations.some((v) => v.startsWith('never runs a tool a person denied')),
    runsAnything.violations.slice(0, 3).join('\n'),
  );
  assert.ok(
    runsAnything.violations.some((v) => v.startsWith('never runs an approved call twice')),
    runsAnything.violations.slice(0, 3).join('\n'),
  );
});

test.run();
