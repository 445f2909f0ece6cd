/**
 * The projector: folds committed events into the session tables exactly once, one transaction per
 * batch with its checkpoint (a bad event rolls the batch back); dispatches by type to *-rows.ts and
 * message-rules.ts (why: docs/architecture.md#design-notes-the-projector).
 */
import { ErrorCode, NotFoundError, SessiondError, messageOf } from '../errors.ts';
import { catalog, isEventType, type EventType } from '../events/catalog.ts';
import { promptText } from '../events/prompt.ts';
import { forkedMessages } from './fork-rows.ts';
import { deletedSince } from '../storage/sqlite/delete-session.ts';
import { parsePayload } from '../events/codec.ts';
import type { SessionEvent } from '../events/envelope.ts';
import type { EventLog, Subscription } from '../events/event-log.ts';
import type { Db } from '../storage/sqlite/database.ts';
import { isTransientStorageError, retryTransient } from '../storage/sqlite/transient.ts';
import { systemClock, type Clock } from '../clock.ts';

/** How long `follow` waits out a locked database before it reports the projection stopped. */
export const DEFAULT_LOCKED_RETRY_MS = 60_000;
import { checkpointRows } from './checkpoint.ts';
import { onCommit } from '../storage/sqlite/commit-hooks.ts';
import { inconsistent, invariant, wrapEventError } from './errors.ts';
import type BetterSqlite3 from 'better-sqlite3';
import { executionRows } from './execution-rows.ts';
import { inputRows } from './input-rows.ts';
import { messageRows, toJson } from './message-rows.ts';
import { messageRules } from './message-rules.ts';
import { recoveryRows } from './recovery-rows.ts';
import { waitRows } from './wait-rows.ts';
import { blobRows } from './blob-rows.ts';
import { sessionListRows } from './session-rows.ts';

export const DEFAULT_PROJECTOR_NAME = 'main';

export interface ProjectorOptions {
  /** Checkpoint name (default 'main'). */
  name?: string;
}

export interface ApplyOptions {
  /**
   * The checkpoint this caller last saw. If the stored checkpoint is lower, the projection was
   * reset under the caller (e.g. by a rebuild) and events in between would be lost: `apply` throws.
   */
  expectAtLeast?: number;
}

export interface ApplyResult {
  /** Events folded into the tables. */
  applied: number;
  /** Events at or below the checkpoint, already folded earlier. */
  skipped: number;
  /** The checkpoint after the batch. */
  position: number;
}

export interface FollowOptions {
  /**
   * A batch that cannot be applied stops the subscription and lands here (default: logged to stderr).
   * A locked database is not such a failure: the batch is retried with backoff for `lockedForMs`.
   */
  onError?: (err: unknown) => void;
  /** How long a batch is retried while the database is locked (default `DEFAULT_LOCKED_RETRY_MS`). */
  lockedForMs?: number;
  clock?: Clock;
  /** Called after each batch is committed. */
  onApplied?: (result: ApplyResult) => void;
  /**
   * Called with each batch once the projection holds it, before the next is delivered (a worker's
   * wakes and cancellations ride on the projector's subscription: one consumer of the log, not two).
   * A throw or rejection stops the subscription like a batch that cannot be applied.
   */
  afterBatch?: (events: readonly SessionEvent[]) => Promise<void> | void;
  /**
   * Also fold the events of every group commit of an SqliteEventLog on this projector's own
   * connection inside that commit's transaction (storage/sqlite/commit-hooks.ts), while the projection is
   * at the log's head: appends, rows and checkpoint then commit once, and the subscription finds
   * those batches already applied. When it is not at the head (another process's events came in
   * between) or a batch fails, the subscription applies them as without this option.
   */
  inline?: boolean;
}

type Handlers = { [K in EventType]: (e: SessionEvent<K>) => void };

export class Projector {
  readonly name: string;
  private readonly checkpoints;
  private readonly executions;
  private readonly inputs;
  private readonly recoveries;
  private readonly messages;
  private readonly waits;
  private readonly sessions;
  private readonly blobs;
  /** Sessions deleted (storage/sqlite/delete-session.ts) at a log head at or past a position. */
  private readonly deleted;
  private readonly handlers: Handlers;
  private readonly run: BetterSqlite3.Transaction<(events: readonly SessionEvent[], options: ApplyOptions) => ApplyResult>;

  constructor(
    readonly db: Db,
    options: ProjectorOptions = {},
  ) {
    const name = options.name ?? DEFAULT_PROJECTOR_NAME;
    if (typeof name !== 'string' || name.length === 0) {
      throw new SessiondError(
        ErrorCode.InvalidOption,
        `Invalid projector option name=${JSON.stringify(name)}: use a non-empty string (default "${DEFAULT_PROJECTOR_NAME}").`,
      );
    }
    this.name = name;
    try {
      this.checkpoints = checkpointRows(db);
      this.executions = executionRows(db);
      this.inputs = inputRows(db);
      this.recoveries = recoveryRows(db);
      this.messages = messageRows(db);
      this.waits = waitRows(db);
      this.sessions = sessionListRows(db);
      this.blobs = blobRows(db);
      this.deleted = deletedSince(db);
    } catch (err) {
      throw new NotFoundError(`Database ${db.name} has no projection tables (${messageOf(err)}): run migrate(db) before creating a Projector.`, { cause: err });
    }
    this.handlers = this.createHandlers();
    this.run = db.transaction((events: readonly SessionEvent[], opts: ApplyOptions) => this.fold(events, opts));
  }

  /** The log position folded so far (0 before anything). */
  checkpoint(): number {
    return this.checkpoints.get(this.name);
  }

  /** Folds a batch of committed events (in commit order) in one transaction, checkpoint included. */
  apply(events: readonly SessionEvent[], options: ApplyOptions = {}): ApplyResult {
    if (!Array.isArray(events)) {
      throw new SessiondError(ErrorCode.InvalidOption, `Projector.apply takes an array of committed events, got ${typeof events}.`);
    }
    if (events.length === 0) return { applied: 0, skipped: 0, position: this.checkpoint() };
    return this.run.immediate(events, options);
  }

  /**
   * Subscribes to `log` from the checkpoint and applies each committed batch as it arrives (in this
   * or any process). A batch that fails stops the subscription (`onError`); nothing of it is applied.
   */
  follow(log: EventLog, options: FollowOptions = {}): Subscription {
    let seen = this.checkpoint();
    const clock = options.clock ?? systemClock;
    const lockedForMs = options.lockedForMs ?? DEFAULT_LOCKED_RETRY_MS;
    const removeHook = options.inline
      ? onCommit(this.db, (events) => {
          // inside the log's transaction, in a savepoint: a throw rolls back only this fold
          if (this.checkpoint() === events[0]!.position! - 1) this.fold(events, {});
        })
      : undefined;
    const subscription = log.subscribe({
      after: seen,
      onBatch: async (events) => {
        let result: ApplyResult;
        const checkpoint = removeHook ? this.checkpoint() : 0;
        if (removeHook && events[events.length - 1]!.position! <= checkpoint) {
          // folded in the appends' own transaction (or an older batch seen again)
          seen = checkpoint;
          options.onApplied?.({ applied: 0, skipped: events.length, position: checkpoint });
          await options.afterBatch?.(events);
          return;
        }
        try {
          result = await retryTransient(() => this.apply(events, { expectAtLeast: seen }), { clock, forMs: lockedForMs });
        } catch (err) {
          if (!isTransientStorageError(err)) throw err;
          throw new SessiondError(
            ErrorCode.LogClosed,
            `Projector "${this.name}" stopped at position ${this.checkpoint()}: the database stayed locked for ${lockedForMs} ms while applying the batch at position ${events[0]?.position} (session ${events[0]?.sessionId}): ${messageOf(err)}. Another process holds its write lock; restart this worker once it is released.`,
            { cause: err, details: { projector: this.name, position: this.checkpoint() } },
          );
        }
        seen = result.position;
        options.onApplied?.(result);
        await options.afterBatch?.(events);
      },
      ...(options.onError ? { onError: options.onError } : {}),
    });
    if (!removeHook) return subscription;
    return {
      get position() {
        return subscription.position;
      },
      close: async () => {
        removeHook();
        await subscription.close();
      },
    };
  }

  /**
   * Folds again, in the caller's transaction, committed events (in commit order, all at or below the
   * checkpoint) whose rows the caller has just deleted: a NATS worker applying a deletion after its
   * projector already folded a later session of the same id (nats/delete-session.ts) drops the rows
   * of both and refolds the later one. The checkpoint stays where it is.
   */
  refold(events: readonly SessionEvent[]): number {
    const at = this.checkpoint();
    let last = 0;
    this.writeBehind(() => {
      for (const event of events) {
        try {
          last = checkPosition(event, last);
          if (last > at)
            throw inconsistent(`Projector "${this.name}" cannot refold position ${last}: it is past the checkpoint ${at} (apply it instead).`, {
              checkpoint: at,
            });
          checkType(event);
          this.foldOne(checkEvent(event));
        } catch (err) {
          throw wrapEventError(this.name, event, err, at);
        }
      }
    });
    return events.length;
  }

  /** Runs `body` (folding events), then writes the rows it changed behind (messages, the session list) once. */
  private writeBehind(body: () => void): void {
    try {
      body();
      this.messages.flush();
      this.sessions.flush();
    } finally {
      // after a flush nothing is left; after a throw the batch rolls back
      this.messages.discard();
      this.sessions.discard();
    }
  }

  private foldOne(checked: SessionEvent): void {
    (this.handlers[checked.type] as (e: SessionEvent) => void)(checked);
    this.blobs.record(checked);
    this.sessions.touch(checked);
  }

  /** The body of the transaction: no I/O but this connection's statements, no await. */
  private fold(events: readonly SessionEvent[], options: ApplyOptions): ApplyResult {
    const start = this.checkpoint();
    if (options.expectAtLeast !== undefined && start < options.expectAtLeast) {
      throw inconsistent(
        `Projector "${this.name}" is at position ${start}, behind the ${options.expectAtLeast} this caller already saw: the projection was reset (rebuilt?) while it ran. Stop this follower and call follow() again from the new checkpoint.`,
        { projector: this.name, checkpoint: start, expected: options.expectAtLeast },
      );
    }
    let position = start;
    let last = 0;
    let applied = 0;
    let skipped = 0;
    // events of a session deleted after they were read (by `sessiond delete`, in this or another
    // process) are not folded again: their rows stay gone (a later session of the same id is folded)
    const first = events.find((e) => (e.position ?? 0) > start)?.position;
    const deleted = first === undefined ? undefined : this.deleted(first);
    this.writeBehind(() => {
      for (const event of events) {
        try {
          const at = checkPosition(event, last);
          last = at;
          checkType(event);
          if (at <= start) {
            skipped++;
            continue;
          }
          if (deleted !== undefined && deleted.size > 0 && at <= (deleted.get(event.sessionId) ?? 0)) {
            position = Math.max(position, at);
            skipped++;
            continue;
          }
          this.foldOne(checkEvent(event));
          position = Math.max(position, at);
          applied++;
        } catch (err) {
          throw wrapEventError(this.name, event, err, start);
        }
      }
    });
    if (position > start) this.checkpoints.set(this.name, position);
    return { applied, skipped, position };
  }

  /** `changed` = the execution's live row in the event's session was found (and changed). */
  private requireExecution(e: SessionEvent & { payload: { executionId: string } }, changed: boolean): void {
    if (!changed) throw this.noExecution(e);
  }

  private noExecution(e: SessionEvent & { payload: { executionId: string } }): SessiondError {
    const { executionId } = e.payload;
    const row = this.executions.get(executionId);
    const where = row ? `its row belongs to session ${row.session_id}` : 'it was never claimed, or was already settled, cancelled or recovered';
    return inconsistent(`${e.type} for execution ${executionId}, which has no live row in session ${e.sessionId}: ${where}.`, { executionId });
  }

  private requireRecovery(e: SessionEvent & { payload: { executionId: string } }, changed: boolean): void {
    if (!changed) {
      throw inconsistent(
        `${e.type} for execution ${e.payload.executionId}, which has no recovery row in session ${e.sessionId}: a wake is owed only after a recovery.completed that admitted a continuation.`,
        { executionId: e.payload.executionId },
      );
    }
  }

  private createHandlers(): Handlers {
    const { executions: ex, inputs, recoveries, messages, waits, sessions } = this;
    const rules = messageRules(messages);
    const live = (e: SessionEvent & { payload: { executionId: string } }) => ex.get(e.payload.executionId)?.session_id === e.sessionId;
    return {
      'execution.claimed': (e) => {
        const p = e.payload;
        const inserted = ex.insertNew({
          id: p.executionId,
          session_id: e.sessionId,
          owner_id: p.ownerId,
          assistant_message_id: null,
          phase: 'safe',
          assistant_seq: p.assistantSeq,
          time_created: e.time,
          expires_at: p.expiresAt,
          recovery_error: null,
        });
        if (!inserted) {
          const previous = ex.get(p.executionId)!;
          throw inconsistent(
            `execution.claimed for execution ${p.executionId}, which already has a row (session ${previous.session_id}, owner ${previous.owner_id}): an execution is claimed once; a new claim is a new execution.`,
            { executionId: p.executionId },
          );
        }
        // the claim is where a recovery's owed wake lands; an input's wake is done only when the
        // input is promoted (a claim that dies before promoting it must leave it findable)
        recoveries.clearWakes(e.sessionId);
      },
      'execution.renewed': (e) => this.requireExecution(e, ex.setExpiresAt(e.payload.executionId, e.sessionId, e.payload.expiresAt)),
      'execution.started': (e) => this.requireExecution(e, live(e)),
      'execution.phase': (e) => this.requireExecution(e, ex.setPhase(e.payload.executionId, e.sessionId, e.payload.phase)),
      'execution.cancelled': (e) => this.requireExecution(e, ex.delete(e.payload.executionId, e.sessionId)),
      'execution.settled': (e) => this.requireExecution(e, ex.delete(e.payload.executionId, e.sessionId)),

      'input.admitted': (e) => {
        const p = e.payload;
        const inserted = inputs.insertNew({
          id: p.inputId,
          session_id: e.sessionId,
          prompt: promptText(p.prompt),
          parts: typeof p.prompt === 'string' ? null : JSON.stringify(p.prompt),
          delivery: p.delivery,
          admitted_seq: e.seq,
          promoted_seq: null,
          wake_pending: p.wake ? 1 : 0,
          time_created: e.time,
          not_before: p.notBefore ?? null,
        });
        if (!inserted) {
          const previous = inputs.get(e.sessionId, p.inputId)!;
          throw inconsistent(
            `Input ${p.inputId} of session ${e.sessionId} admitted twice (first at seq ${previous.admitted_seq}, again at seq ${e.seq}): admission is idempotent by input id.`,
            { inputId: p.inputId },
          );
        }
        if (p.tags) sessions.tag(e, p.tags);
        if (p.owner !== undefined && e.seq === 1) sessions.own(e, p.owner);
        if (p.caller !== undefined) sessions.calledBy(e, p.caller);
      },
      'input.promoted': (e) => {
        const { inputId } = e.payload;
        const promoted = inputs.promote(inputId, e.sessionId, e.seq);
        if (!promoted) {
          const row = inputs.get(e.sessionId, inputId);
          throw row && row.session_id === e.sessionId
            ? invariant(`Input ${inputId} of session ${e.sessionId} promoted twice (first at seq ${row.promoted_seq}, again at seq ${e.seq})`, {
                inputId,
                first: row.promoted_seq,
                again: e.seq,
              })
            : invariant(`Input ${inputId} of session ${e.sessionId} promoted at seq ${e.seq} but never admitted`, { inputId });
        }
        rules.userPromoted(e, promoted);
      },

      'input.dropped': (e) => {
        for (const inputId of e.payload.inputIds) {
          if (!inputs.drop(inputId, e.sessionId, e.seq)) {
            throw invariant(
              `Input ${inputId} of session ${e.sessionId} dropped at seq ${e.seq} but it was not pending (never admitted, or already promoted or dropped)`,
              { inputId },
            );
          }
        }
      },

      'step.started': (e) => {
        rules.stepStarted(e);
        this.requireExecution(e, ex.setAssistantMessage(e.payload.executionId, e.sessionId, e.payload.messageId));
      },
      'step.ended': rules.stepEnded,
      'step.failed': rules.stepFailed,
      'step.recovered': rules.stepRecovered,
      'text.delta': () => {
        throw new SessiondError(ErrorCode.InvalidPayload, 'text.delta is live-only and is never projected.');
      },
      'text.streamed': rules.textStreamed,
      'text.completed': rules.textCompleted,
      'reasoning.delta': () => {
        throw new SessiondError(ErrorCode.InvalidPayload, 'reasoning.delta is live-only and is never projected.');
      },
      'reasoning.completed': rules.reasoningCompleted,
      'model.retry_scheduled': () => {
        throw new SessiondError(ErrorCode.InvalidPayload, 'model.retry_scheduled is live-only and is never projected.');
      },
      'tool.progressed': () => {
        throw new SessiondError(ErrorCode.InvalidPayload, 'tool.progressed is live-only and is never projected.');
      },
      'turn.interrupted': () => {
        throw new SessiondError(ErrorCode.InvalidPayload, 'turn.interrupted is live-only and is never projected.');
      },
      'tool.called': rules.toolCalled,
      'tool.started': rules.toolStarted,
      'tool.succeeded': rules.toolSucceeded,
      'tool.failed': rules.toolFailed,
      'wait.started': (e) => {
        const p = e.payload;
        waits.start({
          session_id: e.sessionId,
          execution_id: p.executionId,
          kind: p.kind,
          name: p.name,
          message_id: p.messageId ?? null,
          call_id: p.callId ?? null,
          tool: p.tool ?? null,
          until: p.until ?? null,
          outcome: null,
          time_created: e.time,
          time_resolved: null,
        });
        rules.waitStarted(e);
      },
      'wait.resolved': (e) => {
        const p = e.payload;
        if (!waits.resolve(e.sessionId, p.executionId, p.kind, p.name, p.outcome, e.time))
          throw inconsistent(
            `wait.resolved (${p.outcome}) for the ${p.kind} ${p.name} of execution ${p.executionId}, which is not an open wait of session ${e.sessionId}: a wait is resolved once, after its wait.started.`,
            { executionId: p.executionId, kind: p.kind, name: p.name },
          );
        rules.waitResolved(e);
      },
      'compaction.started': rules.compactionStarted,
      'compaction.completed': rules.compactionCompleted,

      'session.tagged': (e) => sessions.tag(e, e.payload.tags),
      'budget.set': () => {}, // the budget lives in the session's snapshot (sessiond budget, status), not in a row
      'session.forked': (e) => {
        sessions.fork(e, e.payload.from);
        if (e.payload.tags) sessions.tag(e, e.payload.tags);
        if (e.payload.owner !== undefined && e.seq === 1) sessions.own(e, e.payload.owner);
        for (const m of forkedMessages(e)) {
          const taken = messages.get(e.sessionId, m.id);
          if (taken)
            throw inconsistent(
              `session.forked: message id ${m.id} is already a ${taken.type} message of session ${e.sessionId}: a fork is a session's first event.`,
              {
                messageId: m.id,
              },
            );
          messages.insert(m);
        }
      },
      'recovery.started': (e) => this.requireExecution(e, live(e)),
      'recovery.completed': (e) => {
        const p = e.payload;
        this.requireExecution(e, ex.delete(p.executionId, e.sessionId));
        if (p.continuationInputId === null) return; // nothing admitted: no wake owed, no row
        const previous = recoveries.get(p.executionId);
        if (previous)
          throw inconsistent(
            `recovery.completed for execution ${p.executionId}, which was already recovered (continuation ${previous.continuation_message_id}): an execution is recovered once.`,
            { executionId: p.executionId },
          );
        recoveries.insert({
          session_id: e.sessionId,
          execution_id: p.executionId,
          assistant_message_id: p.assistantMessageId,
          continuation_message_id: p.continuationInputId,
          phase: p.phase,
          wake_pending: 1,
          wake_attempts: 0,
          recovery_error: p.error === undefined ? null : toJson(p.error),
          time_created: e.time,
        });
      },
      'recovery.wake_requested': (e) => this.requireRecovery(e, recoveries.setAttempts(e.payload.executionId, e.sessionId, e.payload.attempt)),
      'recovery.wake_delivered': (e) => this.requireRecovery(e, recoveries.delivered(e.payload.executionId, e.sessionId)),
      'recovery.wake_failed': (e) => {
        const p = e.payload;
        const error = toJson(p.error);
        this.requireRecovery(e, recoveries.failed(p.executionId, e.sessionId, p.attempt, error, p.parked));
        ex.setRecoveryError(p.executionId, e.sessionId, error); // only where the execution row still exists
      },
    };
  }
}

/** The event's position: present, a whole number, and not lower than the previous one in the batch. */
function checkPosition(event: SessionEvent, previous: number): number {
  const at = (event as { position?: unknown }).position;
  if (at === undefined || at === null) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `The event has no position: the projector folds only committed events read back from a log (EventLog.readAll or subscribe), whose position drives its checkpoint. Pass events from the log, not drafts.`,
    );
  }
  if (typeof at !== 'number' || !Number.isSafeInteger(at) || at < 1) {
    throw new SessiondError(ErrorCode.InvalidOption, `The event has an invalid position ${JSON.stringify(at)}: expected a whole number >= 1 from the log.`);
  }
  if (at < previous) {
    throw inconsistent(
      `The event's position ${at} comes after position ${previous} in the same batch: a batch must be in commit order (positions never decrease).`,
    );
  }
  return at;
}

/** The event's type is one this projector knows, and durable. */
function checkType(event: SessionEvent): void {
  if (!isEventType(event.type)) {
    throw new SessiondError(
      ErrorCode.UnknownEventType,
      `Unknown event type ${JSON.stringify(event.type)}: this projector knows ${Object.keys(catalog).length} types. Upgrade sessiond to project this log.`,
    );
  }
  if (!catalog[event.type].durable) {
    throw new SessiondError(
      ErrorCode.InvalidPayload,
      `Event type ${event.type} is live-only: it is never stored, so it must never reach the projector. Feed apply() events read from the log (readAll/subscribe), not from the live bus.`,
    );
  }
}

function bad(what: string): SessiondError {
  return new SessiondError(ErrorCode.InvalidPayload, `The event has ${what}.`);
}

/** Validates the envelope and the payload against the catalog; returns the event with the parsed payload. */
function checkEvent(event: SessionEvent): SessionEvent {
  if (typeof event.id !== 'string' || event.id.length === 0) throw bad('no id');
  if (typeof event.sessionId !== 'string' || event.sessionId.length === 0) throw bad('no session id');
  if (!Number.isSafeInteger(event.seq) || event.seq < 1) throw bad(`an invalid seq ${JSON.stringify(event.seq)} (expected a whole number >= 1)`);
  if (!Number.isSafeInteger(event.time) || event.time < 0) throw bad(`an invalid time ${JSON.stringify(event.time)} (expected milliseconds since the epoch)`);
  const payload = parsePayload(event.type, event.version, event.payload);
  // the envelope's fields only, as a log reads them back (one object shape for every event)
  return {
    id: event.id,
    type: event.type,
    version: event.version,
    sessionId: event.sessionId,
    seq: event.seq,
    time: event.time,
    payload,
    position: event.position,
  } as SessionEvent;
}
