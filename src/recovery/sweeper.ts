/**
 * The recovery sweep, at worker start and every `intervalMs`: recovers expired executions, attempts
 * owed wakes (backing off, then parking), ends due waits and scheduled prompts, delivers finished
 * session calls. Candidates come from the projection; the session machine decides against the log,
 * so any number of sweepers may run. Why: docs/architecture.md#recovery.
 */
import { checkKeys, wholeNumber } from '../options.ts';
import type { Clock, TimerHandle } from '../clock.ts';
import { messageOf, isRefusal, recordedError } from '../errors.ts';
import { stateOf } from '../machines/decider.ts';
import { leaseLive, openWaits, runnableAt } from '../machines/session-context.ts';
import { resolveWait } from '../input/resolve.ts';
import { childTurnEnd, type ChildTurnEnd } from './child-turn.ts';
import { admittedSeq } from '../machines/session-context.ts';
import type { SessionExecution } from '../execution/session-execution.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { Attr, appended, failed, startRecoverSpan } from '../observability/tracing.ts';

export const DEFAULT_SWEEP_INTERVAL_MS = 5_000;
export const DEFAULT_MAX_WAKE_ATTEMPTS = 5;
export const DEFAULT_WAKE_BACKOFF_MS = 1_000;

/** Where the sweep looks for work (the projection; see src/projector/queries.ts). */
export interface RecoveryCandidates {
  /** Sessions with an execution whose lease expired at or before `now` and was not settled. */
  expired(now: number): string[] | Promise<string[]>;
  /** Sessions that may have work to run at `now`: an input not promoted yet (a scheduled one only once due), or a recovery wake owed. */
  runnable(now: number): string[] | Promise<string[]>;
  /** Sessions with an open wait whose time came at or before `now` (a timer, a signal's timeout). */
  due(now: number): string[] | Promise<string[]>;
  /** Sessions whose turn waits on another session's turn (an open session call). */
  callers?(): string[] | Promise<string[]>;
  /** Sessions deleted (`sessiond delete`, by any process) since the last call: what this worker has cached of them is dropped. */
  deleted?(): string[] | Promise<string[]>;
}

export interface SweeperOptions {
  execution: SessionExecution;
  candidates: RecoveryCandidates;
  clock: Clock;
  intervalMs?: number;
  maxWakeAttempts?: number;
  wakeBackoffMs?: number;
  onNotice?: (notice: RecoveryNotice) => void;
}

export type RecoveryNotice =
  /** `partialText`: UTF-16 units of the interrupted step's answer the log holds and the continuation goes on from (0: none). */
  | { type: 'recovered'; sessionId: string; executionId: string; continuationInputId: string; partialText: number }
  | { type: 'wake_attempt'; sessionId: string; attempt: number }
  /** A timer elapsed or a signal timed out; `resumed`: it was the turn's last wait, and the turn runs again. */
  | { type: 'wait_elapsed'; sessionId: string; kind: 'timer' | 'signal' | 'session'; name: string; resumed: boolean }
  /** A child's turn ended and its end was given to the session that called it; `resumed`: it was that turn's last wait. */
  | { type: 'child_delivered'; sessionId: string; name: string; child: string; outcome: ChildTurnEnd['outcome']; resumed: boolean }
  | { type: 'parked'; sessionId: string; message: string }
  | { type: 'error'; sessionId: string; message: string }
  /** A whole pass failed (e.g. the projection was locked); the next pass tries again. */
  | { type: 'sweep_failed'; message: string };

export interface SweepReport {
  recovered: string[];
  /** Sessions one of whose waits the pass ended (its time came). */
  elapsed: string[];
  /** Sessions given a child's end by the pass (a session call's wait resolved). */
  delivered: string[];
  woken: string[];
  parked: string[];
  errors: { sessionId: string; message: string }[];
}

const emptyReport = (): SweepReport => ({ recovered: [], elapsed: [], delivered: [], woken: [], parked: [], errors: [] });

export function continuationIdFor(executionId: string): string {
  return `inp_cont_${executionId}`;
}

export class RecoverySweeper {
  readonly intervalMs: number;
  readonly maxWakeAttempts: number;
  readonly wakeBackoffMs: number;
  private timer: TimerHandle | undefined;
  private running: Promise<SweepReport> | undefined;
  private stopped = false;
  /** The session the pass in progress is on (what `stop` waits for), undefined between sessions. */
  private on: string | undefined;
  /** Deliveries `deliverTo` started that have not ended (stop waits for them). */
  private readonly delivering = new Set<Promise<void>>();

  constructor(private readonly o: SweeperOptions) {
    checkKeys('RecoverySweeper', o, ['execution', 'candidates', 'clock', 'intervalMs', 'maxWakeAttempts', 'wakeBackoffMs', 'onNotice']);
    this.intervalMs = wholeNumber('RecoverySweeper', 'intervalMs', o.intervalMs, DEFAULT_SWEEP_INTERVAL_MS, 1, 'milliseconds');
    this.maxWakeAttempts = wholeNumber('RecoverySweeper', 'maxWakeAttempts', o.maxWakeAttempts, DEFAULT_MAX_WAKE_ATTEMPTS);
    this.wakeBackoffMs = wholeNumber('RecoverySweeper', 'wakeBackoffMs', o.wakeBackoffMs, DEFAULT_WAKE_BACKOFF_MS, 0, 'milliseconds');
  }

  /** Sweeps now, then every `intervalMs` until `stop()`. */
  start(): void {
    this.stopped = false;
    const tick = async () => {
      if (this.stopped) return;
      await this.sweep().catch((err: unknown) => {
        this.o.onNotice?.({ type: 'sweep_failed', message: `the recovery sweep failed (${messageOf(err)}); it runs again in ${this.intervalMs} ms` });
      });
      if (!this.stopped) this.timer = this.o.clock.setTimeout(() => void tick(), this.intervalMs);
    };
    void tick();
  }

  /** What the sweep is doing, in words (said when a stop waits for it). */
  get doing(): string {
    const parts = [
      this.on ? `a pass, on session ${this.on}` : this.running ? 'a pass' : '',
      this.delivering.size > 0 ? `${this.delivering.size} deliveries` : '',
    ];
    return parts.filter(Boolean).join(' and ') || 'nothing';
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.o.clock.clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
    await Promise.all(this.delivering);
  }

  /** One pass. Concurrent calls share the pass in progress. */
  sweep(): Promise<SweepReport> {
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<SweepReport> {
    const report = emptyReport();
    const now = this.o.clock.now();
    const { candidates } = this.o;
    // a session deleted by another process: its cached state and transcript here are of a session that is gone
    for (const id of (await candidates.deleted?.()) ?? []) this.o.execution.forget(id);
    const sessions = new Set([
      ...(await candidates.expired(now)),
      ...(await candidates.due(now)),
      ...((await candidates.callers?.()) ?? []),
      ...(await candidates.runnable(now)),
    ]);
    for (const sessionId of sessions) {
      if (this.stopped) break;
      this.on = sessionId;
      try {
        await this.recoverOne(sessionId, report);
      } catch (err) {
        report.errors.push({ sessionId, message: messageOf(err) });
        this.o.onNotice?.({ type: 'error', sessionId, message: messageOf(err) });
      } finally {
        this.on = undefined;
      }
    }
    return report;
  }

  private async recoverOne(sessionId: string, report: SweepReport): Promise<void> {
    const { handler } = this.o.execution;
    let snapshot = await handler.load(sessionId); // the log decides, not the projection
    const exec = snapshot.context.execution;
    const state = stateOf(snapshot);
    if ((state === 'claimed' || state === 'running') && exec && !leaseLive(snapshot.context, this.o.clock.now())) {
      // The continuation's id comes from the execution the decision recovers, on the state it is
      // decided on: after a lost race the recovery is decided again on a fresh state, whose expired
      // execution may be a later one (its id taken from the first state admitted that
      // continuation twice).
      const span = startRecoverSpan(sessionId);
      try {
        let events: SessionEvent[];
        let target = exec;
        ({ snapshot, events } = await handler.execute(sessionId, (now, current) => {
          target = current.context.execution ?? exec;
          return { type: 'recover', now, continuationInputId: continuationIdFor(target.id) };
        }));
        const recovered = events.find((e) => e.type === 'recovery.started')!.payload as { executionId: string };
        report.recovered.push(sessionId);
        const continuationInputId = continuationIdFor(recovered.executionId);
        appended(span, {
          [Attr.executionId]: recovered.executionId,
          [Attr.ownerId]: target.ownerId,
          [Attr.seq]: events.at(-1)?.seq ?? snapshot.context.seq,
          [Attr.continuationInput]: continuationInputId,
          [Attr.outcome]: 'recovered',
        });
        // the log knows the owner is gone: live subscribers hear it now, with what to keep of the answer
        const told = await this.o.execution.announceInterrupted(sessionId, target, 'lease_expired', continuationInputId);
        const partialText = told?.recorded.reduce((n, p) => n + p.length, 0) ?? 0;
        this.o.onNotice?.({ type: 'recovered', sessionId, executionId: recovered.executionId, continuationInputId, partialText });
      } catch (err) {
        span.setAttribute(Attr.outcome, isRefusal(err) ? `refused: ${err.reason}` : 'failed');
        if (!isRefusal(err)) {
          failed(span, err);
          throw err;
        }
        snapshot = await handler.load(sessionId); // another sweeper got there first, or the owner renewed in time
      } finally {
        span.end();
      }
    }
    await this.deliverChildren(sessionId, report);
    await this.endDueWaits(sessionId, report);
    await this.redriveWake(sessionId, report);
  }

  /**
   * Gives `callerId`'s waiting turn the end of each child turn it called that has ended, now instead
   * of at the next pass: the worker calls it when it sees a child's turn end. The pass stays the
   * fallback (a worker that died before delivering, a child run elsewhere). Never throws: a failure
   * is a notice, and the next pass tries again.
   */
  deliverTo(callerId: string): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const report = emptyReport();
    const delivery = this.deliverChildren(callerId, report)
      .catch((err: unknown) => this.o.onNotice?.({ type: 'error', sessionId: callerId, message: messageOf(err) }))
      .finally(() => this.delivering.delete(delivery));
    this.delivering.add(delivery);
    return delivery;
  }

  /** Gives a waiting turn the end of each child turn it called that has ended (decided on the logs). */
  private async deliverChildren(sessionId: string, report: SweepReport): Promise<void> {
    const { handler } = this.o.execution;
    const calls = openWaits((await handler.load(sessionId)).context).filter((w) => w.kind === 'session' && w.child);
    for (const w of calls) {
      const child = w.child!;
      const end = await this.childEnd(child.sessionId, child.inputId);
      if (!end) continue;
      try {
        const result = await resolveWait(handler, sessionId, {
          kind: 'session',
          name: w.name,
          outcome: 'delivered',
          data: end,
          actor: `session:${child.sessionId}`,
        });
        if (!result.resolved) continue;
        if (!report.delivered.includes(sessionId)) report.delivered.push(sessionId);
        const resumed = result.resumeInputId !== undefined;
        this.o.onNotice?.({ type: 'child_delivered', sessionId, name: w.name, child: child.sessionId, outcome: end.outcome, resumed });
      } catch (err) {
        // another worker delivered it first, or it timed out just before: the log decided
        if (!isRefusal(err, 'already_resolved') && !isRefusal(err, 'no_such_wait')) throw err;
      }
    }
  }

  /** How the child's turn that runs `inputId` ended, read from its log; undefined while it goes on. */
  private async childEnd(childId: string, inputId: string): Promise<ChildTurnEnd | undefined> {
    const { handler } = this.o.execution;
    const ctx = (await handler.load(childId)).context;
    if (ctx.seq === 0)
      return { outcome: 'failed', text: '', executionId: 'none', error: `session ${childId} has no events: it was deleted before its turn ended` };
    if (ctx.pending.some((p) => p.inputId === inputId)) return undefined; // not started yet
    const seq = admittedSeq(ctx, inputId);
    return childTurnEnd(await handler.log.readSession(childId, seq === undefined ? {} : { afterSeq: seq - 1 }), inputId);
  }

  /** Ends the waits whose time came (decided on the log): timers elapse, signals time out. */
  private async endDueWaits(sessionId: string, report: SweepReport): Promise<void> {
    const { handler } = this.o.execution;
    const now = this.o.clock.now();
    const due = openWaits((await handler.load(sessionId)).context).filter((w) => w.kind !== 'approval' && w.until !== null && w.until <= now);
    for (const w of due) {
      const kind = w.kind as 'timer' | 'signal' | 'session';
      try {
        const result = await resolveWait(handler, sessionId, { kind, name: w.name, outcome: kind === 'timer' ? 'elapsed' : 'timed_out' });
        if (!result.resolved) continue;
        if (!report.elapsed.includes(sessionId)) report.elapsed.push(sessionId);
        this.o.onNotice?.({ type: 'wait_elapsed', sessionId, kind, name: w.name, resumed: result.resumeInputId !== undefined });
      } catch (err) {
        // another worker ended it first (or a value came just before the timeout): the log decided
        if (!isRefusal(err, 'already_resolved') && !isRefusal(err, 'no_such_wait')) throw err;
      }
    }
  }

  /** Attempts an owed wake (durably counted), with backoff; parks the session past the bound. */
  private async redriveWake(sessionId: string, report: SweepReport): Promise<void> {
    const { handler } = this.o.execution;
    const snapshot = await handler.load(sessionId);
    const recovery = snapshot.context.recovery;
    if (recovery?.parked) return; // parked: only a person wakes it now
    if (!recovery?.wakePending) {
      // A prompt admitted with a wake that never landed (its waker died): wake it. Inputs admitted
      // with `wake: false`, and sessions that merely sit idle, are left alone.
      const state = stateOf(snapshot);
      // A turn that waits holds its inputs until its waits end; a scheduled prompt waits for its time.
      const now = this.o.clock.now();
      const runnable = snapshot.context.pending.some((p) => p.wake && runnableAt(p, now));
      if ((state === 'idle' || state === 'settled') && runnable && openWaits(snapshot.context).length === 0) {
        const result = await this.o.execution.resume(sessionId);
        if (result.status === 'started') report.woken.push(sessionId);
      }
      return;
    }
    const now = this.o.clock.now();
    if (recovery.attempts >= this.maxWakeAttempts) {
      const message = `gave up waking session ${sessionId} after ${recovery.attempts} attempts${recovery.lastError ? ` (last error: ${recovery.lastError.message})` : ''}; wake it by hand once the cause is fixed`;
      await handler.execute(sessionId, (t) => ({ type: 'failWake', now: t, park: true, error: { type: 'wake_exhausted', message } }));
      report.parked.push(sessionId);
      this.o.onNotice?.({ type: 'parked', sessionId, message });
      return;
    }
    if (recovery.attempts > 0 && now < recovery.lastAttemptAt + this.wakeBackoffMs * 2 ** (recovery.attempts - 1)) return;
    try {
      await handler.execute(sessionId, (t) => ({ type: 'requestWake', now: t }));
    } catch (err) {
      if (isRefusal(err, 'no_wake_pending')) return; // another worker's claim delivered the wake first
      throw err;
    }
    this.o.onNotice?.({ type: 'wake_attempt', sessionId, attempt: recovery.attempts + 1 });
    try {
      const result = await this.o.execution.resume(sessionId);
      if (result.status === 'started' || result.status === 'running_here') report.woken.push(sessionId);
      else if (result.status === 'refused' && result.reason !== 'lease_live') {
        await handler.execute(sessionId, (t) => ({ type: 'failWake', now: t, park: false, error: { type: 'wake_refused', message: result.message } }));
      }
    } catch (err) {
      await handler.execute(sessionId, (t) => ({ type: 'failWake', now: t, park: false, error: recordedError(err) }));
    }
  }
}
