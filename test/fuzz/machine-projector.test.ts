/**
 * Fuzzing the machine and the projector (fast-check, fixed seeds, bounded runs).
 *
 * - The machine: random command sequences (random kinds, owners, execution ids, times, runner
 *   events) are decided and the accepted ones folded: deciding never throws, the folded state
 *   never has two owners (a claim is accepted only when no execution is in progress), and every
 *   decision is the one a small reference model of the rules makes (accepted, or the same reason).
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
import { command, forkCommand, ids, now, protoEvent, tagCommand, waitCommand } from '../support/arbitraries.ts';
import { MAX_TAGS } from '../../src/events/tags.ts';
import type { Command } from '../../src/machines/commands.ts';
import type { Wait } from '../../src/machines/session-context.ts';

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

/**
 * The rules, restated as a small reference model that shares nothing with the machine but the
 * command shapes: what a session holds that the rules look at, and for each command the refusal
 * reason, or null when it is accepted (with what accepting it changes).
 */
interface Ref {
  exec: { id: string; owner: string; expiresAt: number; leaseMs: number; started: boolean; cancelled: boolean; ended: boolean; recovered: boolean } | null;
  pending: string[];
  admitted: string[];
  wake: { owed: boolean; parked: boolean } | null;
  /** The turn's waits: kind, name, time, outcome, and whether an approved call started. */
  waits: RefWait[];
  /** Every wait resolved so far, in order (kind, name): the latest of a kind and name is remembered after its turn. */
  decided: string[];
  /** The session's tags, and whether it has any event yet. */
  tags: Record<string, string>;
  exists: boolean;
}
interface RefWait {
  kind: string;
  name: string;
  exec: string;
  until: number | null;
  outcome: string | null;
  started: boolean;
}
const OUTCOMES: Record<string, string[]> = { approval: ['approved', 'denied'], signal: ['delivered', 'timed_out'], timer: ['elapsed'] };
const RUNNER_TYPES = new Set([
  'execution.phase',
  'input.promoted',
  'step.started',
  'step.ended',
  'step.failed',
  'text.completed',
  'reasoning.completed',
  'tool.called',
  'tool.started',
  'tool.succeeded',
  'tool.failed',
  'wait.started',
  'compaction.started',
  'compaction.completed',
]);

function refDecide(r: Ref, c: Command): { reason: string | null; next: Ref } {
  const e = r.exec;
  const inProgress = e !== null && !e.ended && !e.recovered;
  const live = inProgress && c.now < e.expiresAt;
  const holds = 'executionId' in c && 'ownerId' in c && live && e.id === c.executionId && e.owner === c.ownerId;
  const refuse = (reason: string) => ({ reason, next: r });
  const accept = (next: Partial<Ref>) => ({ reason: null, next: { ...r, ...next } });
  const admit = (id: string) => ({ pending: [...r.pending, id], admitted: [...r.admitted, id] });
  const endedOne = () => (e && 'executionId' in c && e.id === c.executionId ? refuse('already_settled') : refuse('claim_lost'));
  // a turn that waits is settled (its execution ended, not recovered) with waits open
  const settled = e?.ended === true && !e.recovered;
  const open = r.waits.filter((w) => w.outcome === null);
  const sealed = () => [...r.decided, ...open.map((w) => `${w.kind}:${w.name}`)];
  switch (c.type) {
    case 'claim':
      if (inProgress) return refuse(live ? (e.owner === c.ownerId ? 'own_lease_live' : 'lease_live') : 'lease_expired');
      if (settled && open.length > 0) return refuse('waiting');
      if (r.pending.length === 0) return refuse('nothing_pending');
      return accept({
        exec: {
          id: c.executionId,
          owner: c.ownerId,
          expiresAt: c.now + c.leaseMs,
          leaseMs: c.leaseMs,
          started: false,
          cancelled: false,
          ended: false,
          recovered: false,
        },
        wake: r.wake && { ...r.wake, owed: false },
      });
    case 'start':
      if (!inProgress) return refuse('not_claimed');
      if (e.started) return refuse('already_started');
      return holds ? accept({ exec: { ...e, started: true } }) : refuse('claim_lost');
    case 'renew':
      if (inProgress) return holds ? accept({ exec: { ...e, expiresAt: c.now + e.leaseMs } }) : refuse('claim_lost');
      return refuse(e?.id === c.executionId && e.cancelled ? 'cancelled' : 'claim_lost');
    case 'record': {
      if (!inProgress || !e.started) return refuse(e?.id === c.executionId && e.cancelled ? 'cancelled' : 'claim_lost');
      if (!holds) return refuse('claim_lost');
      if (c.events.some((x) => !RUNNER_TYPES.has(x.type))) return refuse('not_runner_event');
      const promoted = c.events.flatMap((x) => (x.type === 'input.promoted' ? [x.payload.inputId] : []));
      if (promoted.some((id, i) => promoted.indexOf(id) !== i || !r.pending.includes(id))) return refuse('not_pending');
      const started = c.events.flatMap((x) => (x.type === 'tool.started' ? [x.payload.callId] : []));
      if (started.some((id) => r.waits.some((w) => w.kind === 'approval' && w.name === id && (w.outcome !== 'approved' || w.started))))
        return refuse('not_approved');
      let waits = r.waits;
      for (const x of c.events) {
        if (x.type === 'wait.started' && x.payload.executionId === e.id) {
          const p = x.payload;
          waits = [
            ...waits.filter((w) => !(w.kind === p.kind && w.name === p.name)),
            { kind: p.kind, name: p.name, exec: e.id, until: p.until ?? null, outcome: null, started: false },
          ];
        }
        if (x.type === 'tool.started') {
          const id = x.payload.callId;
          const i = waits.findIndex((w) => w.kind === 'approval' && w.name === id && w.outcome === 'approved' && !w.started);
          if (i >= 0) waits = waits.map((w, j) => (j === i ? { ...w, started: true } : w));
        }
      }
      return accept({ pending: r.pending.filter((id) => !promoted.includes(id)), waits });
    }
    case 'settle':
      if (!inProgress) return e?.cancelled ? refuse('cancelled') : endedOne();
      if (!holds) return refuse('claim_lost');
      if (c.outcome === 'released' && c.continuationInputId) {
        if (r.admitted.includes(c.continuationInputId)) return refuse('already_admitted');
        return accept({ exec: { ...e, ended: true }, ...admit(c.continuationInputId) });
      }
      if (c.outcome === 'waiting' && !open.some((w) => w.exec === e.id)) return refuse('nothing_to_wait_for');
      // a turn that succeeds or fails is over: its waits go; one that waits or is handed back keeps them
      // (a turn that succeeds or fails ends its open waits cancelled: decided)
      if (c.outcome === 'waiting' || c.outcome === 'released') return accept({ exec: { ...e, ended: true } });
      return accept({ exec: { ...e, ended: true }, waits: [], decided: sealed() });
    case 'cancel':
      if (settled && open.length > 0) return accept({ waits: [], decided: sealed() });
      if (!inProgress || (c.executionId !== undefined && c.executionId !== e.id)) return refuse('nothing_to_cancel');
      return accept({ exec: { ...e, cancelled: true, ended: true }, waits: [], decided: sealed() });
    case 'resolve': {
      const w = r.waits.find((x) => x.kind === c.kind && x.name === c.name);
      const known = w ? w.outcome !== null : r.decided.includes(`${c.kind}:${c.name}`);
      if (known) return refuse('already_resolved');
      if (!settled || !w) return refuse('no_such_wait');
      if (!OUTCOMES[c.kind]!.includes(c.outcome)) return refuse('wrong_outcome');
      if ((c.outcome === 'elapsed' || c.outcome === 'timed_out') && (w.until === null || c.now < w.until)) return refuse('not_due');
      if (r.admitted.includes(c.continuationInputId)) return refuse('already_admitted');
      const waits = r.waits.map((x) => (x === w ? { ...x, outcome: c.outcome } : x));
      return accept({ waits, decided: [...r.decided, `${c.kind}:${c.name}`], ...(open.length === 1 ? admit(c.continuationInputId) : {}) });
    }
    case 'admit': {
      if (r.admitted.includes(c.inputId)) return refuse('already_admitted');
      const tags = { ...r.tags, ...c.tags };
      if (Object.keys(tags).length > MAX_TAGS) return refuse('tag_limit');
      return accept({ ...admit(c.inputId), tags });
    }
    case 'tag': {
      if (!r.exists) return refuse('no_events');
      const tags = { ...r.tags };
      for (const [k, v] of Object.entries(c.tags)) {
        if (v === null) delete tags[k];
        else tags[k] = v;
      }
      const same = Object.keys(tags).length === Object.keys(r.tags).length && Object.entries(tags).every(([k, v]) => r.tags[k] === v);
      if (same) return refuse('nothing_to_change');
      return Object.keys(tags).length > MAX_TAGS ? refuse('tag_limit') : accept({ tags });
    }
    case 'budget':
      return r.exists ? accept({}) : refuse('no_events');
    case 'fork':
      // a fork is a session's first event; its prompts' input ids count as admitted
      if (r.exists) return refuse('session_exists');
      return accept({ tags: { ...c.tags }, admitted: [...r.admitted, ...c.transcript.flatMap((i) => (i.type === 'user' ? [i.inputId] : []))] });
    case 'recover':
      if (!inProgress) return refuse('nothing_to_recover');
      if (live) return refuse('lease_not_expired');
      if (r.admitted.includes(c.continuationInputId)) return refuse('already_admitted');
      return accept({ exec: { ...e, recovered: true }, ...admit(c.continuationInputId), wake: { owed: true, parked: false } });
    case 'requestWake':
      return r.wake?.owed && !r.wake.parked ? accept({}) : refuse('no_wake_pending');
    case 'failWake':
      return r.wake?.owed && !r.wake.parked ? accept({ wake: { owed: !c.park, parked: c.park } }) : refuse('no_wake_pending');
    case 'dropPending':
      return r.pending.length > 0 ? accept({ pending: [] }) : refuse('nothing_to_drop');
  }
}

test('fuzz - 500 random sequences of forks, admissions, tags and turns: the machine refuses and changes tags as the reference model does, never past the limit', () => {
  const reasons = new Set<string>();
  fc.assert(
    fc.property(fc.array(fc.oneof(command, tagCommand, tagCommand, forkCommand), { minLength: 5, maxLength: 40 }), (commands) => {
      let snap = initialSnapshot('ses_tags');
      let ref: Ref = { exec: null, pending: [], admitted: [], wake: null, waits: [], decided: [], tags: {}, exists: false };
      let clock = 0;
      for (const [i, random] of commands.entries()) {
        clock += random.now % 12_000;
        const c = { ...random, now: clock } as Command;
        const d = decide(snap, c);
        const expected = refDecide(ref, c);
        const got = d.ok ? null : d.reason;
        if (got !== expected.reason)
          throw new Error(`command ${i} (${JSON.stringify(c)}): the machine says ${got ?? 'accepted'}, the rules say ${expected.reason ?? 'accepted'}`);
        reasons.add(got ?? 'accepted');
        ref = { ...expected.next, exists: ref.exists || d.ok };
        if (d.ok) snap = commit(snap, d.events, c.now).snapshot;
        assert.equal(snap.context.tags, ref.tags, `command ${i}: the session's tags`);
        assert.ok(Object.keys(snap.context.tags).length <= MAX_TAGS);
      }
    }),
    { numRuns: 500, seed: SEED },
  );
  for (const reason of ['accepted', 'no_events', 'nothing_to_change', 'session_exists']) assert.ok(reasons.has(reason), `the sequences reach ${reason}`);
});

/** Commands of a turn that waits for an approval, a signal and a timer (their times are the step sizes of a run). */
const WAITING_TURN: Command[] = [
  { type: 'admit', now: 0, inputId: 'inp_w', prompt: 'p', delivery: 'queue', wake: true },
  { type: 'claim', now: 10, ownerId: 'own_w', executionId: 'exe_w', leaseMs: 30_000 },
  { type: 'start', now: 10, ownerId: 'own_w', executionId: 'exe_w' },
  {
    type: 'record',
    now: 10,
    ownerId: 'own_w',
    executionId: 'exe_w',
    events: [
      { type: 'wait.started', payload: { executionId: 'exe_w', kind: 'approval', name: 'call_1', messageId: 'msg_1', callId: 'call_1', tool: 't' } },
      { type: 'wait.started', payload: { executionId: 'exe_w', kind: 'signal', name: 'call_2', until: 2_000 } },
      { type: 'wait.started', payload: { executionId: 'exe_w', kind: 'timer', name: 'call_3', until: 1_000 } },
    ],
  },
  { type: 'settle', now: 10, ownerId: 'own_w', executionId: 'exe_w', outcome: 'waiting' },
];

/** A resolve of `w`, with an outcome its kind may end with (or not, one time in ten) and a fresh continuation id. */
function aimAt(c: Extract<Command, { type: 'resolve' }>, w: { kind: Wait['kind']; name: string }, dice: number, continuationInputId: string): Command {
  const outcomes = OUTCOMES[w.kind]!;
  const outcome = dice === 0 ? c.outcome : (outcomes[dice % outcomes.length] as typeof c.outcome);
  return { ...c, kind: w.kind, name: w.name, outcome, continuationInputId };
}

test('fuzz - each of 1,000 random sequences of 10 to 40 commands is decided as a small reference model of the rules decides it: accepted, or refused for the same reason', () => {
  const reasons = new Set<string>();
  fc.assert(
    // `aimed`: the command names the current execution and its owner (a runner's own writes), else its random ones
    // time moves forward by up to 12 s a command (or 0.5 s in a quick run; the random `now` taken as the step), so leases live across commands
    fc.property(fc.array(fc.tuple(fc.oneof(command, waitCommand), fc.nat(9)), { minLength: 10, maxLength: 40 }), fc.boolean(), (steps, quick) => {
      let snap = initialSnapshot('ses_ref');
      let ref: Ref = { exec: null, pending: [], admitted: [], wake: null, waits: [], decided: [], tags: {}, exists: false };
      let clock = 0;
      // a quick run starts from a turn that waits for an approval, a signal and a timer (then anything may come)
      const prefix: [Command, number][] = quick ? WAITING_TURN.map((c) => [c, 9]) : [];
      for (const [i, [random, dice]] of [...prefix, ...steps].entries()) {
        const aimed = dice < (quick ? 9 : 5); // a quick run is mostly the owner's own commands
        const e = snap.context.execution;
        clock += random.now % (quick ? 500 : 12_000); // quick: many commands within one lease (turns that wait, resolve and resume)
        const timed = { ...random, now: clock };
        const mine = aimed && e && 'ownerId' in timed && timed.type !== 'claim' ? { ...timed, executionId: e.id, ownerId: e.ownerId } : timed;
        // an aimed record writes the runner's own events (of its execution); an aimed resolve names one of the turn's waits
        const waits = snap.context.waits;
        const c: Command =
          mine.type === 'record' && aimed && e
            ? { ...mine, events: mine.events.map((x) => ({ ...x, payload: { ...x.payload, executionId: e.id } }) as typeof x) }
            : mine.type === 'resolve' && aimed && waits.length > 0
              ? aimAt(mine, waits[dice % waits.length]!, dice, `inp_resume_${i}`)
              : mine;
        const d = decide(snap, c);
        const expected = refDecide(ref, c);
        const got = d.ok ? null : d.reason;
        if (got !== expected.reason)
          throw new Error(
            `command ${i} (${JSON.stringify(c)}) in ${stateOf(snap)}: the machine says ${got ?? 'accepted'}, the rules say ${expected.reason ?? 'accepted'}`,
          );
        reasons.add(got ?? 'accepted');
        ref = { ...expected.next, exists: ref.exists || d.ok };
        if (d.ok) snap = commit(snap, d.events, c.now).snapshot;
        assert.equal(snap.context.tags, ref.tags, `command ${i}: the session's tags`);
      }
    }),
    { numRuns: 1_000, seed: SEED },
  );
  for (const reason of ['waiting', 'no_such_wait', 'already_resolved', 'wrong_outcome', 'not_due', 'not_approved', 'nothing_to_wait_for'])
    assert.ok(reasons.has(reason), `the sequences reach the waits' refusal ${reason}`);
  assert.ok(reasons.size >= 17, `the sequences reach most outcomes (${[...reasons].sort().join(', ')})`);
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
