/**
 * The session machine (XState v5), pure: folds committed events (idle -> claimed -> running ->
 * settled, and recovering) and decides commands, whose guarded transitions emit a `decision` or a
 * `refusal` without changing state. Guards swap with `sessionMachine.provide({ guards })`.
 * States and rules: docs/architecture.md#the-session-machine.
 */
import { isoTime } from '../clock.ts';
import { and, assertEvent, assign, emit, not, setup } from 'xstate';
import { ErrorCode, SessiondError } from '../errors.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { durableEventTypes, type EventType } from '../events/catalog.ts';
import {
  admittedInLog,
  runnableAt,
  admittedSeq,
  foldContext,
  initialContext,
  leaseLive,
  openWaits,
  pendingBlobBytes,
  pendingBytes,
  startable,
  type ExecutionState,
  type SessionContext,
  type Wait,
} from './session-context.ts';
import type { Continuation, RecordedError, WaitKind, WaitOutcome } from '../events/catalog.ts';
import { promptBlobBytes, promptBytes } from '../events/prompt.ts';
import { RUNNER_EVENT_TYPES, Refusal, type Command, type ProtoEvent } from './commands.ts';
import { MAX_TAGS, applyTagChanges, effectiveChanges } from '../events/tags.ts';
import { budgetAfter } from './budget-spend.ts';

type MachineEvent = SessionEvent | Command;
/** What the machine emits for a command: its decision, or its refusal with a reason and the words for it. */
export type Emitted = { type: 'decision'; events: ProtoEvent[] } | { type: 'refusal'; reason: Refusal; message: string };
type Args = { context: SessionContext; event: MachineEvent };

/** The command a guard or message runs for (they run for commands only; a committed event here is a bug). */
function commandOf(e: MachineEvent): Command {
  if (!('now' in e)) throw new SessiondError(ErrorCode.Internal, `The session machine evaluated a command guard for committed event ${e.type}.`);
  return e;
}
/** The committed event the `fold` action runs for (it runs for committed events only). */
function committedOf(e: MachineEvent): SessionEvent {
  if ('now' in e) throw new SessiondError(ErrorCode.Internal, `The session machine tried to fold command ${e.type} as a committed event.`);
  return e;
}
/** The input a command would admit as a continuation: a recovery's, or a hand-back's (a `released` settlement). */
const continuationIdOf = (c: Command) =>
  c.type === 'recover' || c.type === 'resolve' || (c.type === 'settle' && c.outcome === 'released') ? c.continuationInputId : undefined;
/** The wait a `resolve` names (by kind and name), if the turn has it. */
const waitOf = (ctx: SessionContext, c: Command): Wait | undefined =>
  c.type === 'resolve' ? ctx.waits.find((w) => w.kind === c.kind && w.name === c.name) : undefined;
/** How the wait a `resolve` names ended (the turn's, else the latest of that kind and name the session remembers), if it did. */
export function decisionOf(ctx: SessionContext, c: Command): { outcome: WaitOutcome; time: number } | undefined {
  if (c.type !== 'resolve') return undefined;
  const w = waitOf(ctx, c);
  if (w) return w.outcome === null ? undefined : { outcome: w.outcome, time: w.resolvedAt ?? 0 };
  for (let i = ctx.decided.length - 1; i >= 0; i--) {
    const [kind, name, outcome, time] = ctx.decided[i]!;
    if (kind === c.kind && name === c.name) return { outcome, time };
  }
  return undefined;
}
/** The outcomes each kind of wait ends with, when resolved (`cancelled` is a cancel's). */
export const WAIT_OUTCOMES: Record<WaitKind, readonly WaitOutcome[]> = {
  approval: ['approved', 'denied'],
  signal: ['delivered', 'timed_out'],
  timer: ['elapsed'],
  session: ['delivered', 'timed_out'],
};
/** A wait in words: `approval of call_1 (send_mail)`, `signal payment`, `timer sleep-1 (until ...)`. */
export function describeWait(w: Wait): string {
  if (w.kind === 'approval') return `approval of call ${w.name}${w.tool ? ` (${w.tool})` : ''}`;
  if (w.kind === 'session') return `session call ${w.name}${w.child ? ` (session ${w.child.sessionId})` : ''}`;
  return `${w.kind} ${w.name}${w.until !== null ? ` (${w.kind === 'timer' ? 'until' : 'times out at'} ${isoTime(w.until)})` : ''}`;
}
const ownerOf = (c: Command) => ('ownerId' in c ? c.ownerId : undefined);
const executionOf = (c: Command) => ('executionId' in c ? c.executionId : undefined);
const at = (ms: number | undefined) => (ms === undefined ? 'an unknown time' : isoTime(ms));

/** The plain-words message of each refusal (what the `refuse` action emits). */
export const refusalMessages: Record<Refusal, (a: Args) => string> = {
  lease_live: ({ context }) =>
    `session ${context.sessionId} is owned by ${context.execution?.ownerId} until ${at(context.execution?.expiresAt)} (execution ${context.execution?.id})`,
  own_lease_live: ({ context }) =>
    `owner ${context.execution?.ownerId} already holds a live lease on session ${context.sessionId} (execution ${context.execution?.id}) with no runner attached here; wait for it to expire and be recovered`,
  lease_expired: ({ context }) =>
    `execution ${context.execution?.id} on session ${context.sessionId} expired at ${at(context.execution?.expiresAt)} and has not been recovered yet`,
  recovering: ({ context }) => `session ${context.sessionId} is being recovered`,
  claim_lost: ({ context, event }) => `Session execution claim lost: ${executionOf(commandOf(event)) ?? context.execution?.id}`,
  cancelled: ({ context }) => `execution ${context.execution?.id} was cancelled; its settlement changes nothing`,
  already_settled: ({ context }) => `execution ${context.execution?.id} is already settled (${context.execution?.outcome})`,
  not_claimed: ({ context }) => `session ${context.sessionId} has no claimed execution to start`,
  already_started: ({ context }) => `execution ${context.execution?.id} has already started`,
  nothing_to_cancel: ({ context, event }) => {
    const asked = executionOf(commandOf(event));
    return asked !== undefined && context.execution
      ? `execution ${asked} is not the one in progress on session ${context.sessionId} (that is ${context.execution.id}): nothing to cancel`
      : `session ${context.sessionId} has no execution in progress to cancel`;
  },
  not_runner_event: ({ event }) => {
    assertEvent(event, 'record');
    return `a runner may not write ${event.events
      .map((e) => e.type)
      .filter((t) => !RUNNER_EVENT_TYPES.has(t))
      .join(', ')}`;
  },
  not_pending: ({ context }) =>
    `invariant violated: promoting an input of session ${context.sessionId} that is not pending (already promoted or never admitted)`,
  already_admitted: ({ event }) => {
    const c = commandOf(event);
    if (c.type === 'admit') return `input ${c.inputId} was already admitted`;
    // a continuation's id comes from the execution it continues: admitted already means this decision ran before
    return `the continuation ${continuationIdOf(c)} of this ${c.type === 'recover' ? 'recovery' : 'hand-back'} was already admitted: an input is admitted once`;
  },
  lease_not_expired: ({ context }) =>
    `never recovers a live execution lease: execution ${context.execution?.id} is live until ${at(context.execution?.expiresAt)}`,
  nothing_to_recover: ({ context }) => `session ${context.sessionId} has no expired execution to recover`,
  nothing_pending: ({ context }) => `session ${context.sessionId} has no pending input to run`,
  no_wake_pending: ({ context }) => `session ${context.sessionId} owes no recovery wake`,
  pending_limit: ({ context, event }) => {
    assertEvent(event, 'admit');
    const which = pendingLimitPassed(context, event);
    return `input ${event.inputId} was not admitted to session ${context.sessionId}: ${which}. The session was woken to run what is pending: retry in a moment, or drop pending inputs (sessiond cancel ${context.sessionId} --pending), or raise the limit (--max-pending-inputs, --max-pending-bytes, --max-pending-blob-bytes)`;
  },
  nothing_to_drop: ({ context }) => `session ${context.sessionId} has no pending input to drop`,
  waiting: ({ context }) =>
    `session ${context.sessionId} waits for ${openWaits(context).map(describeWait).join(', ')}: approve or deny a call (sessiond approve|deny ${context.sessionId} CALL), deliver a signal (sessiond resolve ${context.sessionId} NAME --data JSON), or cancel the turn (sessiond cancel ${context.sessionId}); new inputs wait until then`,
  no_such_wait: ({ context, event }) => {
    const c = commandOf(event);
    const kind = c.type === 'resolve' ? c.kind : 'wait';
    const name = c.type === 'resolve' ? c.name : '?';
    const open = openWaits(context);
    return `session ${context.sessionId} has no ${kind} named ${name} to resolve: ${open.length ? `it waits for ${open.map(describeWait).join(', ')}` : 'it waits for nothing (a turn still running has not ended its execution to wait yet)'}`;
  },
  already_resolved: ({ context, event }) => {
    const c = commandOf(event);
    const d = decisionOf(context, c)!;
    const w = waitOf(context, c);
    const what = w ? describeWait(w) : c.type === 'resolve' ? `${c.kind} ${c.name}` : 'wait';
    return `the ${what} of session ${context.sessionId} was already resolved: ${d.outcome} at ${isoTime(d.time)}; a wait is resolved once`;
  },
  wrong_outcome: ({ event }) => {
    const c = commandOf(event);
    if (c.type !== 'resolve') return 'not a resolve';
    return `a ${c.kind} wait ends ${WAIT_OUTCOMES[c.kind].join(' or ')}, not ${c.outcome}`;
  },
  not_due: ({ context, event }) => {
    const w = waitOf(context, commandOf(event))!;
    return w.until === null
      ? `the ${describeWait(w)} of session ${context.sessionId} has no timeout: it cannot time out`
      : `never wakes a timer early: the ${describeWait(w)} of session ${context.sessionId} is due at ${isoTime(w.until)}, not yet at ${isoTime(commandOf(event).now)}`;
  },
  not_approved: ({ context, event }) => {
    const w = unapprovedStart(context, commandOf(event))!;
    if (w.kind === 'session')
      return w.started
        ? `never records a session tool call's answer twice: call ${w.callId} (${w.tool}) of session ${context.sessionId} has it already`
        : `call ${w.callId} (${w.tool}) of session ${context.sessionId} still waits for session ${w.child?.sessionId}: its answer is recorded when the child's turn ends`;
    return w.started
      ? `never runs an approved call twice: call ${w.callId} (${w.tool}) of session ${context.sessionId} has already started`
      : `never runs a tool a person ${w.outcome === 'denied' ? 'denied' : 'has not approved'}: call ${w.callId} (${w.tool}) of session ${context.sessionId} is ${w.outcome ?? 'awaiting approval'}`;
  },
  tag_limit: ({ context, event }) =>
    `session ${context.sessionId} would carry ${tagsAfter(context, commandOf(event)).length} tags, over the limit of ${MAX_TAGS}: remove some first (sessiond tag ${context.sessionId} KEY=)`,
  no_events: ({ context }) => `session ${context.sessionId} has no events: admit a prompt first (it creates the session, and may carry tags)`,
  nothing_to_change: ({ context }) => `session ${context.sessionId} already has these tags`,
  not_owner: ({ context }) => `session ${context.sessionId} belongs to another owner`,
  session_exists: ({ context }) =>
    `session ${context.sessionId} already has ${context.seq} events${context.forkedFrom ? ` (forked from ${context.forkedFrom.sessionId} at sequence ${context.forkedFrom.seq})` : ''}: fork into a new session id`,
  nothing_to_wait_for: ({ context, event }) =>
    `execution ${executionOf(commandOf(event))} of session ${context.sessionId} recorded no wait: a turn settles waiting only after it asks for an approval, a signal or a timer`,
};

/** The tag keys the session would carry after a command's tags (an admission's or a `tag`'s). */
function tagsAfter(ctx: SessionContext, c: Command): string[] {
  const changes = c.type === 'tag' ? c.tags : c.type === 'admit' ? (c.tags ?? {}) : {};
  return Object.keys(applyTagChanges(ctx.tags, changes));
}

/** The approval wait a runner's `tool.started` would break: a call denied, not yet approved, or already started. */
function unapprovedStart(ctx: SessionContext, c: Command): Wait | undefined {
  if (c.type !== 'record') return undefined;
  for (const e of c.events) {
    if (e.type !== 'tool.started') continue;
    const w = ctx.waits.find((x) => (x.kind === 'approval' || x.kind === 'session') && x.callId === e.payload.callId);
    if (w && (!startable(w) || w.started)) return w;
  }
  return undefined;
}

/** The pending limit an admission would pass, in words (undefined when it stays within them, or carries none). */
function pendingLimitPassed(context: SessionContext, admit: Extract<Command, { type: 'admit' }>): string | undefined {
  const limits = admit.limits;
  if (!limits) return undefined;
  if (context.pending.length + 1 > limits.maxPendingInputs) {
    return `it would be pending input ${context.pending.length + 1}, over the limit of ${limits.maxPendingInputs} pending inputs per session`;
  }
  const after = pendingBytes(context) + promptBytes(admit.prompt);
  if (after > limits.maxPendingBytes)
    return `its ${promptBytes(admit.prompt)} bytes would bring the session's pending prompts to ${after} bytes, over the limit of ${limits.maxPendingBytes} bytes per session`;
  const blobs = promptBlobBytes(admit.prompt);
  if (limits.maxPendingBlobBytes !== undefined && blobs > 0) {
    const blobsAfter = pendingBlobBytes(context) + blobs;
    if (blobsAfter > limits.maxPendingBlobBytes)
      return `its ${blobs} bytes of images and files would bring the session's pending ones to ${blobsAfter} bytes, over the limit of ${limits.maxPendingBlobBytes} bytes per session`;
  }
  return undefined;
}

const refuse = (reason: Refusal) => ({ type: 'refuse' as const, params: { reason } });
const decide = { type: 'decide' as const };

// Transitions shared by `claimed` and `running`: an execution is in progress.
const claimWhileOwned = [
  { guard: 'ownsLiveLease', actions: refuse(Refusal.OwnLeaseLive) },
  { guard: 'leaseLive', actions: refuse(Refusal.LeaseLive) },
  { actions: refuse(Refusal.LeaseExpired) },
] as const;
const whenHoldingClaim = [{ guard: 'holdsClaim', actions: decide }, { actions: refuse(Refusal.ClaimLost) }] as const;
// never admits an input twice: a continuation whose id is already admitted is refused, not admitted again
const settleHoldingClaim = [
  { guard: and(['holdsClaim', 'continuationAdmitted']), actions: refuse(Refusal.AlreadyAdmitted) },
  { guard: and(['holdsClaim', 'waitsForNothing']), actions: refuse(Refusal.NothingToWaitFor) },
  ...whenHoldingClaim,
] as const;
const recoverIfExpired = [
  { guard: 'leaseLive', actions: refuse(Refusal.LeaseNotExpired) },
  { guard: 'continuationAdmitted', actions: refuse(Refusal.AlreadyAdmitted) },
  { actions: decide },
] as const;
const executionInProgress = {
  'execution.cancelled': { target: 'settled', actions: 'fold' },
  'execution.settled': { target: 'settled', actions: 'fold' },
  'recovery.started': { target: 'recovering', actions: 'fold' },
  claim: claimWhileOwned,
  renew: whenHoldingClaim,
  settle: settleHoldingClaim,
  cancel: [{ guard: 'cancelsAnotherExecution', actions: refuse(Refusal.NothingToCancel) }, { actions: decide }],
  recover: recoverIfExpired,
} as const;

export const sessionMachine = setup({
  types: {
    context: {} as SessionContext,
    events: {} as MachineEvent,
    input: {} as { sessionId: string },
    emitted: {} as Emitted,
  },
  guards: {
    /** The current execution's lease is live at the command's `now`. */
    leaseLive: ({ context, event }) => leaseLive(context, commandOf(event).now),
    /** The caller owns the current, live lease (same owner id). */
    ownsLiveLease: ({ context, event }) => {
      const c = commandOf(event);
      return leaseLive(context, c.now) && context.execution?.ownerId === ownerOf(c);
    },
    /** The caller's execution is the current one, it owns it, and the lease is live: runner writes and renewals. */
    holdsClaim: ({ context, event }) => {
      const c = commandOf(event);
      return context.execution?.id === executionOf(c) && context.execution?.ownerId === ownerOf(c) && leaseLive(context, c.now);
    },
    /** A turn needs something to run: an input admitted in the log, not yet promoted, and due (never runs a prompt before its time). */
    hasPending: ({ context, event }) => {
      const now = commandOf(event).now;
      return context.pending.some((p) => runnableAt(p, now));
    },
    isCurrentExecution: ({ context, event }) => context.execution?.id === executionOf(commandOf(event)),
    /** A cancel bound to an execution that is not the one in progress. */
    cancelsAnotherExecution: ({ context, event }) => {
      assertEvent(event, 'cancel');
      return event.executionId !== undefined && context.execution?.id !== event.executionId;
    },
    cancelled: ({ context }) => context.execution?.cancelled === true,
    onlyRunnerEvents: ({ event }) => {
      assertEvent(event, 'record');
      return event.events.every((e) => RUNNER_EVENT_TYPES.has(e.type));
    },
    promotesOnlyPending: ({ context, event }) => {
      assertEvent(event, 'record');
      const ids = event.events.flatMap((e) => (e.type === 'input.promoted' ? [e.payload.inputId] : []));
      // pending and admitted in the log: an input a stored snapshot only claims is never promoted
      return ids.every((id, i) => ids.indexOf(id) === i && context.pending.some((p) => p.inputId === id && runnableAt(p, event.now)));
    },
    alreadyAdmitted: ({ context, event }) => {
      assertEvent(event, 'admit');
      return admittedSeq(context, event.inputId) !== undefined;
    },
    /** The continuation a recovery or hand-back would admit is admitted already. */
    continuationAdmitted: ({ context, event }) => {
      const id = continuationIdOf(commandOf(event));
      return id !== undefined && admittedSeq(context, id) !== undefined;
    },
    /** never admits past a session's pending limits: what waits in a session stays bounded. */
    overPendingLimits: ({ context, event }) => {
      assertEvent(event, 'admit');
      return pendingLimitPassed(context, event) !== undefined;
    },
    /** never lets a session carry more than `MAX_TAGS` tags: what a client can add to a session stays bounded. */
    overTagLimit: ({ context, event }) => tagsAfter(context, commandOf(event)).length > MAX_TAGS,
    /** An admission naming an owner into a session another owner holds (one with no owner takes anyone's, and stays ownerless). */
    ownedByOther: ({ context, event }) => {
      assertEvent(event, 'admit');
      const held = context.ownedBy ?? null;
      return event.owner !== undefined && held !== null && held !== event.owner;
    },
    /** A session with no events: a `tag` would create it (only an admission does). */
    noEvents: ({ context }) => context.seq === 0,
    /** A `tag` that changes nothing. */
    tagsUnchanged: ({ context, event }) => {
      assertEvent(event, 'tag');
      return Object.keys(effectiveChanges(context.tags, event.tags)).length === 0;
    },
    /** Something to drop: a pending input (one of those named, when named). */
    hasPendingToDrop: ({ context, event }) => {
      assertEvent(event, 'dropPending');
      const named = event.inputIds;
      return context.pending.some((p) => p.source === 'user' && admittedInLog(p) && (named === undefined || named.includes(p.inputId)));
    },
    /** The turn waits for something not yet resolved (an approval, a signal, a timer). */
    hasOpenWaits: ({ context }) => openWaits(context).length > 0,
    /** A `resolve` names no wait of the turn. */
    noSuchWait: ({ context, event }) => waitOf(context, commandOf(event)) === undefined,
    /** A `resolve` names a wait that has ended already (in this turn, or one the session remembers). */
    waitResolved: ({ context, event }) => decisionOf(context, commandOf(event)) !== undefined,
    /** A `resolve` whose outcome the wait's kind does not end with (an approval is not `elapsed`). */
    wrongOutcome: ({ event }) => {
      assertEvent(event, 'resolve');
      return !WAIT_OUTCOMES[event.kind].includes(event.outcome);
    },
    /** never wakes a timer early: a timer elapses, and a signal times out, only at or after its time. */
    waitNotDue: ({ context, event }) => {
      assertEvent(event, 'resolve');
      if (event.outcome !== 'elapsed' && event.outcome !== 'timed_out') return false;
      const until = waitOf(context, event)?.until ?? null;
      return until === null || event.now < until;
    },
    /** never runs a tool a person denied, never runs an approved call twice: `tool.started` of an approval's call only once approved, once. */
    startsOnlyApprovedCalls: ({ context, event }) => unapprovedStart(context, commandOf(event)) === undefined,
    /** A settlement `waiting` from an execution that recorded no open wait. */
    waitsForNothing: ({ context, event }) => {
      assertEvent(event, 'settle');
      return event.outcome === 'waiting' && !openWaits(context).some((w) => w.executionId === event.executionId);
    },
    /** The recovery wake is still owed (not landed, not parked). */
    wakePending: ({ context }) => context.recovery?.wakePending === true && !context.recovery.parked,
  },
  actions: {
    fold: assign(({ context, event }) => foldContext(context, committedOf(event))),
    refuse: emit((args: Args, params: { reason: Refusal }) => ({
      type: 'refusal' as const,
      reason: params.reason,
      message: refusalMessages[params.reason](args),
    })),
    decide: emit(({ context, event }: Args) => ({ type: 'decision' as const, events: decisionFor(context, commandOf(event)) })),
  },
}).createMachine({
  id: 'session',
  context: ({ input }) => initialContext(input.sessionId),
  initial: 'idle',
  on: {
    // Every committed event folds the context; the states below add the moves between states.
    ...(Object.fromEntries(durableEventTypes.map((t) => [t, { actions: 'fold' }])) as Record<EventType, { actions: 'fold' }>),
    // Fallbacks: commands a state does not accept.
    claim: { actions: refuse(Refusal.Recovering) },
    start: { actions: refuse(Refusal.NotClaimed) },
    // a renew or a runner write of the execution a cancel ended says so (the runner stops as cancelled, not as a lost claim)
    renew: [{ guard: and(['isCurrentExecution', 'cancelled']), actions: refuse(Refusal.Cancelled) }, { actions: refuse(Refusal.ClaimLost) }],
    record: [{ guard: and(['isCurrentExecution', 'cancelled']), actions: refuse(Refusal.Cancelled) }, { actions: refuse(Refusal.ClaimLost) }],
    settle: [
      { guard: 'cancelled', actions: refuse(Refusal.Cancelled) },
      { guard: 'isCurrentExecution', actions: refuse(Refusal.AlreadySettled) },
      { actions: refuse(Refusal.ClaimLost) },
    ],
    cancel: { actions: refuse(Refusal.NothingToCancel) },
    admit: [
      // first: another owner's session answers nothing about its inputs
      { guard: 'ownedByOther', actions: refuse(Refusal.NotOwner) },
      { guard: 'alreadyAdmitted', actions: refuse(Refusal.AlreadyAdmitted) },
      { guard: 'overPendingLimits', actions: refuse(Refusal.PendingLimit) },
      { guard: 'overTagLimit', actions: refuse(Refusal.TagLimit) },
      { actions: decide },
    ],
    fork: [{ guard: not('noEvents'), actions: refuse(Refusal.SessionExists) }, { actions: decide }],
    tag: [
      { guard: 'noEvents', actions: refuse(Refusal.NoEvents) },
      { guard: 'tagsUnchanged', actions: refuse(Refusal.NothingToChange) },
      { guard: 'overTagLimit', actions: refuse(Refusal.TagLimit) },
      { actions: decide },
    ],
    budget: [{ guard: 'noEvents', actions: refuse(Refusal.NoEvents) }, { actions: decide }],
    dropPending: [{ guard: 'hasPendingToDrop', actions: decide }, { actions: refuse(Refusal.NothingToDrop) }],
    recover: { actions: refuse(Refusal.NothingToRecover) },
    requestWake: [{ guard: 'wakePending', actions: decide }, { actions: refuse(Refusal.NoWakePending) }],
    failWake: [{ guard: 'wakePending', actions: decide }, { actions: refuse(Refusal.NoWakePending) }],
    // waits are open only in settled (a waiting turn holds no execution); elsewhere a resolve finds an ended wait or none
    resolve: [{ guard: 'waitResolved', actions: refuse(Refusal.AlreadyResolved) }, { actions: refuse(Refusal.NoSuchWait) }],
  },
  states: {
    idle: {
      on: {
        'execution.claimed': { target: 'claimed', actions: 'fold' },
        claim: [{ guard: 'hasPending', actions: decide }, { actions: refuse(Refusal.NothingPending) }],
      },
    },
    claimed: {
      on: {
        ...executionInProgress,
        'execution.started': { target: 'running', actions: 'fold' },
        start: whenHoldingClaim,
      },
    },
    running: {
      on: {
        ...executionInProgress,
        start: { actions: refuse(Refusal.AlreadyStarted) },
        record: [
          { guard: not('holdsClaim'), actions: refuse(Refusal.ClaimLost) },
          { guard: not('onlyRunnerEvents'), actions: refuse(Refusal.NotRunnerEvent) },
          { guard: not('promotesOnlyPending'), actions: refuse(Refusal.NotPending) },
          { guard: not('startsOnlyApprovedCalls'), actions: refuse(Refusal.NotApproved) },
          { actions: decide },
        ],
      },
    },
    recovering: {
      on: {
        'recovery.completed': { target: 'idle', actions: 'fold' },
        recover: { actions: refuse(Refusal.Recovering) },
      },
    },
    settled: {
      on: {
        'execution.claimed': { target: 'claimed', actions: 'fold' },
        // a turn that waits holds nothing, and nothing else runs before it resumes
        claim: [
          { guard: 'hasOpenWaits', actions: refuse(Refusal.Waiting) },
          { guard: 'hasPending', actions: decide },
          { actions: refuse(Refusal.NothingPending) },
        ],
        // cancelling a waiting turn ends its waits
        cancel: [{ guard: 'hasOpenWaits', actions: decide }, { actions: refuse(Refusal.NothingToCancel) }],
        resolve: [
          { guard: 'waitResolved', actions: refuse(Refusal.AlreadyResolved) },
          { guard: 'noSuchWait', actions: refuse(Refusal.NoSuchWait) },
          { guard: 'wrongOutcome', actions: refuse(Refusal.WrongOutcome) },
          { guard: 'waitNotDue', actions: refuse(Refusal.NotDue) },
          { guard: 'continuationAdmitted', actions: refuse(Refusal.AlreadyAdmitted) },
          { actions: decide },
        ],
      },
    },
  },
});

/** The events a command turns into, once its guards have let it through. */
export function decisionFor(ctx: SessionContext, command: Command): ProtoEvent[] {
  switch (command.type) {
    case 'claim':
      return [
        {
          type: 'execution.claimed',
          payload: {
            executionId: command.executionId,
            ownerId: command.ownerId,
            leaseMs: command.leaseMs,
            expiresAt: command.now + command.leaseMs,
            assistantSeq: ctx.lastAssistantSeq,
          },
        },
        // a claim is where an owed recovery wake lands
        ...(ctx.recovery?.wakePending
          ? [{ type: 'recovery.wake_delivered', payload: { executionId: ctx.recovery.executionId, byExecutionId: command.executionId } } as ProtoEvent]
          : []),
      ];
    case 'start':
      return [
        {
          type: 'execution.started',
          payload: {
            executionId: command.executionId,
            ...(command.traceparent ? { traceparent: command.traceparent } : {}),
            ...(command.parentTraceparent ? { parentTraceparent: command.parentTraceparent } : {}),
          },
        },
      ];
    case 'renew':
      return [{ type: 'execution.renewed', payload: { executionId: command.executionId, expiresAt: command.now + ctx.execution!.leaseMs } }];
    case 'record':
      return command.events;
    case 'settle': {
      const settled: ProtoEvent = {
        type: 'execution.settled',
        payload: { executionId: command.executionId, outcome: command.outcome, ...(command.error ? { error: command.error } : {}) },
      };
      const exec = ctx.execution!;
      if (command.outcome === 'waiting') return [settled];
      // a turn that ends leaves no wait open (one its earlier, interrupted execution asked for and this one did not)
      if (command.outcome === 'succeeded') return [...sealWaits(ctx, 'the turn ended without it'), settled];
      // what a failed or handed-back turn left open (a step, a tool call aborted mid-way) ends with it
      const error =
        command.outcome === 'failed'
          ? (command.error ?? { type: 'failed', name: 'Failed', message: 'the turn failed' })
          : { type: 'released', name: 'Released', message: `the worker ${exec.ownerId} shut down and handed the turn back` };
      return [
        ...sealOpenWork(exec, error, error),
        ...(command.outcome === 'failed' ? sealWaits(ctx, `the turn failed: ${error.message}`) : []),
        settled,
        ...(command.outcome === 'released' && command.continuationInputId
          ? [
              {
                type: 'input.admitted',
                payload: {
                  inputId: command.continuationInputId,
                  prompt: continuationPrompt('handed_back', exec),
                  delivery: 'queue',
                  wake: true,
                  source: 'recovery',
                  continues: continuationOf(exec, 'handed_back'),
                  ...callerTrace(exec),
                },
              } as ProtoEvent,
            ]
          : []),
      ];
    }
    case 'cancel': {
      const exec = ctx.execution!;
      const why = command.reason ? `cancelled: ${command.reason}` : 'cancelled';
      const by = command.actor === undefined ? {} : { actor: command.actor };
      if (exec.outcome !== null) return sealWaits(ctx, why, by); // a waiting turn: its waits end, cancelled
      const error = { type: 'cancelled', name: 'Cancelled', message: why };
      return [
        { type: 'execution.cancelled', payload: { executionId: exec.id, ...(command.reason ? { reason: command.reason } : {}), ...by } },
        ...sealOpenWork(exec, error, error),
        ...sealWaits(ctx, why, by),
      ];
    }
    case 'dropPending': {
      // a continuation (source recovery) stays: it finishes an interrupted turn, and the sweep owes its wake
      const ids = ctx.pending
        .filter((p) => p.source === 'user' && admittedInLog(p) && (command.inputIds === undefined || command.inputIds.includes(p.inputId)))
        .map((p) => p.inputId);
      return [
        {
          type: 'input.dropped',
          payload: { inputIds: ids, ...(command.reason ? { reason: command.reason } : {}), ...(command.actor === undefined ? {} : { actor: command.actor }) },
        },
      ];
    }
    case 'admit':
      return [
        {
          type: 'input.admitted',
          payload: {
            inputId: command.inputId,
            prompt: command.prompt,
            delivery: command.delivery,
            wake: command.wake,
            source: command.source ?? 'user',
            ...(command.notBefore === undefined ? {} : { notBefore: command.notBefore }),
            ...(command.tags === undefined || Object.keys(command.tags).length === 0 ? {} : { tags: command.tags }),
            // the owner is the creating admission's: later ones never change it
            ...(command.owner !== undefined && ctx.seq === 0 ? { owner: command.owner } : {}),
            ...(command.traceparent ? { traceparent: command.traceparent } : {}),
            ...(command.caller === undefined ? {} : { caller: command.caller }),
          },
        },
      ];
    case 'budget':
      return [
        {
          type: 'budget.set',
          payload: { ...budgetAfter(ctx.budget ?? null, command.change), ...(command.actor === undefined ? {} : { actor: command.actor }) },
        },
      ];
    case 'tag':
      return [{ type: 'session.tagged', payload: { tags: effectiveChanges(ctx.tags, command.tags) } }];
    case 'fork':
      return [
        {
          type: 'session.forked',
          payload: {
            from: command.from,
            transcript: command.transcript,
            ...(command.tags && Object.keys(command.tags).length > 0 ? { tags: command.tags } : {}),
            ...(command.owner !== undefined ? { owner: command.owner } : {}),
          },
        },
      ];
    case 'recover': {
      const exec = ctx.execution!;
      const message = `the owner ${exec.ownerId} of execution ${exec.id} lost its lease (expired at ${at(exec.expiresAt)})`;
      const interrupted = { type: 'interrupted', name: 'Interrupted', message: `${message}; the call was not retried` };
      const durable = { type: 'interrupted', name: 'Interrupted', message: `${message}; a durable call may be retried with its idempotency key` };
      const prompt = continuationPrompt('interrupted', exec);
      return [
        { type: 'recovery.started', payload: { executionId: exec.id } },
        ...sealOpenWork(exec, { ...interrupted, message }, interrupted, durable, command.reason ?? message),
        {
          type: 'input.admitted',
          payload: {
            inputId: command.continuationInputId,
            prompt,
            delivery: 'queue',
            wake: true,
            source: 'recovery',
            continues: continuationOf(exec, 'interrupted'),
            ...callerTrace(exec),
          },
        },
        {
          type: 'recovery.completed',
          payload: {
            executionId: exec.id,
            assistantMessageId: exec.openStep ?? exec.lastMessage,
            continuationInputId: command.continuationInputId,
            phase: exec.phase,
          },
        },
      ];
    }
    case 'resolve': {
      const w = waitOf(ctx, command)!;
      const resolved: ProtoEvent = {
        type: 'wait.resolved',
        payload: {
          executionId: w.executionId,
          kind: w.kind,
          name: w.name,
          outcome: command.outcome,
          ...callOf(w),
          ...(command.reason === undefined ? {} : { reason: command.reason }),
          ...(command.data === undefined ? {} : { data: command.data }),
          ...(command.actor === undefined ? {} : { actor: command.actor }),
        },
      };
      if (openWaits(ctx).length > 1) return [resolved]; // the turn resumes when its last wait ends
      const exec = ctx.execution!;
      return [
        resolved,
        {
          type: 'input.admitted',
          payload: {
            inputId: command.continuationInputId,
            prompt: `Resume the turn of execution ${exec.id}: ${ctx.waits.map((x) => `${describeWait(x)} ${x === w ? command.outcome : x.outcome}`).join(', ')}.`,
            delivery: 'queue',
            wake: true,
            source: 'recovery',
            continues: continuationOf(exec, 'resumed'),
            ...callerTrace(exec),
          },
        },
      ];
    }
    case 'requestWake':
      return [{ type: 'recovery.wake_requested', payload: { executionId: ctx.recovery!.executionId, attempt: ctx.recovery!.attempts + 1 } }];
    case 'failWake':
      return [
        {
          type: 'recovery.wake_failed',
          payload: { executionId: ctx.recovery!.executionId, attempt: Math.max(1, ctx.recovery!.attempts), error: command.error, parked: command.park },
        },
      ];
  }
}

/** The events that end a turn's open waits, cancelled (the turn ends: cancelled, or failed). */
function sealWaits(ctx: SessionContext, reason: string, by: { actor?: string } = {}): ProtoEvent[] {
  return openWaits(ctx).map((w) => ({
    type: 'wait.resolved',
    payload: { executionId: w.executionId, kind: w.kind, name: w.name, outcome: 'cancelled', ...callOf(w), reason: reason.slice(0, 1000), ...by },
  }));
}

/** An approval's call, as a `wait.resolved` names it. */
const callOf = (w: Wait) => (w.callId !== null && w.messageId !== null ? { messageId: w.messageId, callId: w.callId } : {});

/**
 * A continuation's prompt: plain words for whoever reads the turn's inputs (a runner may send them
 * to its model as they are), no ids. What it continues, ids included, is data: `continues`.
 */
function continuationPrompt(reason: 'interrupted' | 'handed_back', exec: ExecutionState): string {
  const why = reason === 'interrupted' ? 'the worker running it stopped' : 'the worker running it was shut down';
  const retried = exec.openTools.filter((t) => t.durable).map((t) => t.name);
  const tools = retried.length ? ` The tool calls it was running (${[...new Set(retried)].join(', ')}) are run again first.` : '';
  return `Continue where the previous answer stopped: it was interrupted because ${why}.${tools}`;
}

/** What a continuation of `exec` continues, as data (the prompt says it in words). */
function continuationOf(exec: ExecutionState, reason: Continuation['reason']): Continuation {
  return {
    executionId: exec.id,
    reason,
    phase: exec.phase,
    inputIds: exec.inputIds,
    assistantMessageId: exec.openStep ?? exec.lastMessage,
    retryTools: exec.openTools
      .filter((t) => t.durable && t.idempotencyKey !== null)
      .map((t) => ({ callId: t.callId, messageId: t.messageId, name: t.name, idempotencyKey: t.idempotencyKey! })),
    ...(exec.traceparent ? { traceparent: exec.traceparent } : {}),
  };
}

/** A continuation's trace parent: the caller's context of the turn it continues (through any number of continuations). */
function callerTrace(exec: ExecutionState): { traceparent?: string } {
  return exec.parentTraceparent ? { traceparent: exec.parentTraceparent } : {};
}

/**
 * Events that seal an execution's unfinished work: the open step (recovered, or failed when
 * cancelled) and every open tool call (failed: non-durable ones are never rerun blindly).
 */
function sealOpenWork(
  exec: ExecutionState,
  stepError: RecordedError,
  toolError: RecordedError,
  durableError = toolError,
  recoveredReason?: string,
): ProtoEvent[] {
  const out: ProtoEvent[] = exec.openTools.map((t) => ({
    type: 'tool.failed',
    payload: { executionId: exec.id, messageId: t.messageId, callId: t.callId, error: t.durable ? durableError : toolError },
  }));
  if (exec.openStep) {
    out.push(
      recoveredReason !== undefined
        ? { type: 'step.recovered', payload: { executionId: exec.id, messageId: exec.openStep, reason: recoveredReason } }
        : { type: 'step.failed', payload: { executionId: exec.id, messageId: exec.openStep, error: stepError } },
    );
  }
  return out;
}
