/**
 * `SessiondClient`, the typed client over NATS: commands (request/reply, resent when a worker holds
 * them unanswered), live events (decoded, deduplicated, gaps filled from the stream) and replay.
 * Why: docs/nats.md#the-client.
 *
 *   const client = await SessiondClient.connect({ connection: { servers, user: 'client', pass } });
 *   const sub = await client.subscribe({ sessionId: 'ses_1' }, (event) => console.log(event.type));
 *   await client.admit('ses_1', { prompt: 'hello' }); await sub.close(); await client.close();
 */
import { checkEventsOptions } from '../sessions/events-page.ts';
import { unknownSession } from '../sessions/unknown-session.ts';
import type { DropPendingRequest, DropPendingResult } from '../input/drop.ts';
import type { ResolveResult } from '../input/resolve.ts';
import { systemClock, type Clock } from '../clock.ts';
import { wholeNumber } from '../options.ts';
import { headers as natsHeaders, errors as natsErrors, type Msg, type NatsConnection, type Subscription as NatsSubscription } from '@nats-io/transport-node';
import { ErrorCode, PermissionError, SessiondError, isSessiondError, messageOf } from '../errors.ts';
import { randomIds, validateId, type IdSource } from '../ids.ts';
import type { SessionEvent } from '../events/envelope.ts';
import type { ActorOptions } from '../sessions/actor.ts';
import type { DecisionOptions, EventSubscription, EventsOptions, FollowOptions, SessionEventHandler, Sessions } from '../sessions/sessions.ts';
import { followSession } from '../sessions/follow.ts';
import type { BudgetRequest, BudgetResult } from '../sessions/budget.ts';
import type { TagChanges, TagResult } from '../events/tags.ts';
import type { ForkOptions, ForkResult } from '../sessions/fork-result.ts';
import { checkListFilter, type ListFilter, type SessionPage } from '../sessions/list.ts';
import type { AdmitReceipt } from '../input/admit.ts';
import type { CancelResult } from '../execution/session-execution.ts';
import { connectNats, isNatsConnection, isPermissionError, type NatsConnectionOptions } from '../nats/connection.ts';
import { JetStreamEventLog } from '../nats/jetstream-event-log.ts';
import { decodeLiveEvent, type LiveMessage } from '../nats/live-bus.ts';
import type { LiveFilter } from '../events/live-bus.ts';
import {
  CommandError,
  CommandFailureCode,
  EVENTS_PAGE,
  decodeJson,
  encodeRequest,
  isCommandError,
  type AdmitCommand,
  type CommandReply,
  type CommandRequests,
  type CommandResults,
  type StatusReply,
  type WakeResult,
} from '../nats/command-protocol.ts';
import { STREAM_NAME, subjects, validateTenant, type CommandVerb } from '../nats/subjects.ts';

/** How long a command waits for a worker's reply, over all its attempts. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
/** How long one attempt waits before the command is sent again (it may reach another worker). */
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 2_000;
/** How long a command is sent again while no worker serves its subject (workers resubscribing after an outage). */
export const DEFAULT_NO_WORKER_RETRY_MS = 3_000;
/** Sessions whose last delivered seq is remembered to drop repeated committed events. */
export const DEFAULT_DEDUPE_SESSIONS = 10_000;

export interface SessiondClientOptions {
  /** An open connection (left open by `close()`) or options to open one (closed by `close()`). */
  connection: NatsConnection | NatsConnectionOptions;
  /** How long a command waits for a reply, over all its attempts, before failing with `timeout` (default 10,000 ms). */
  requestTimeoutMs?: number;
  /**
   * How long one attempt waits before the same request is sent again (default 2,000 ms, at most
   * requestTimeoutMs): a worker that stopped running holds the requests it took, and the next
   * attempt goes to a worker that is running. A command may therefore run more than once; every
   * command is safe to repeat (admit by its input id; see docs/protocol.md).
   */
  attemptTimeoutMs?: number;
  /**
   * While no worker serves the command's subject (no responders: nobody received it, so sending it
   * again is safe for every command), send it again with backoff for up to this long before failing
   * with `no_worker` (default 3,000 ms; 0 fails at once).
   */
  noWorkerRetryMs?: number;
  /** The events stream to replay (default `STREAM_NAME`). */
  stream?: string;
  /** Input ids for `admit` calls that give none (default random). */
  ids?: IdSource;
  /** The clock the no-worker retries are paced on (default the system's; the NATS request timeouts are the client library's own). */
  clock?: Clock;
  /**
   * Act as this tenant (a user made by `sessiond setup --tenant NAME`): commands go to
   * `sessiond.t.<tenant>.cmd.<verb>`, and the worker keeps them to the tenant's own sessions (and
   * those with no owner). Replies come to `_INBOX_t.<tenant>` (the inbox prefix, unless the
   * connection options name one). Such a user has no live subjects and no JetStream: `subscribe`,
   * `follow` and `replay` are refused; read sessions with `status` and `list`.
   */
  tenant?: string;
}

export type { LiveFilter };

export interface InvalidLiveMessage {
  subject: string;
  /** The event's seq, when the message was readable that far. */
  seq?: number;
  error: SessiondError;
}

export interface LiveSubscribeOptions {
  /** A message that failed to decode or validate (default: one line on stderr). It is skipped. */
  onInvalid?: (invalid: InvalidLiveMessage) => void;
  /** The handler threw, or the server ended the subscription (default: one line on stderr). */
  onError?: (err: unknown) => void;
  /** Drop committed events already delivered (same session, seq not above the last one); default true. */
  dedupe?: boolean;
  /**
   * Fill gaps from the durable stream (default true when the filter takes every event type): when a
   * session's committed event arrives with a seq past the last one delivered + 1, the events in
   * between are read from the stream and delivered first, in order. Live subjects are core NATS:
   * a message can be lost (a slow subscriber, a writer that died right after its commit) or come out
   * of order (two processes writing one session); this makes the sequence whole again.
   */
  backfill?: boolean;
  /** With `filter.sessionId`: events up to this seq count as delivered, so the first live event backfills everything after it. */
  afterSeq?: number;
}

export interface LiveSubscriptionStats {
  delivered: number;
  invalid: number;
  duplicates: number;
  backfilled: number;
}

export interface LiveSubscription {
  /** The NATS subject subscribed to, e.g. `sessiond.live.ses_1.>`. */
  readonly subject: string;
  readonly stats: LiveSubscriptionStats;
  /** Resolves when the subscription ends (closed, or refused by the server). */
  readonly done: Promise<void>;
  close(): Promise<void>;
}

export interface ReplayOptions {
  /** One session's events (default: every session, in commit order). */
  sessionId?: string;
  /** Only events with a log position above this. */
  after?: number;
  /** Only events with a session seq above this (with `sessionId`). */
  afterSeq?: number;
  /** At most this many events (whole appends when replaying every session). */
  limit?: number;
}

export type LiveHandler = (event: LiveMessage) => void | Promise<void>;

/** Admissions sent again at most this often when a worker answered `sequence_conflict` (the session kept moving under it). */
const ADMIT_CONFLICT_ATTEMPTS = 5;

export class SessiondClient implements Sessions {
  private log: Promise<JetStreamEventLog> | undefined;
  private readonly subscriptions = new Set<LiveSubscription>();
  private closed = false;
  /** The tenant this client acts as (`SessiondClientOptions.tenant`). */
  private tenant: string | undefined;

  private constructor(
    readonly nc: NatsConnection,
    private readonly ownsConnection: boolean,
    private readonly timeoutMs: number,
    private readonly attemptTimeoutMs: number,
    private readonly noWorkerRetryMs: number,
    private readonly stream: string,
    private readonly ids: IdSource,
    private readonly user: string | undefined,
    private readonly clock: Clock,
  ) {}

  static async connect(options: SessiondClientOptions): Promise<SessiondClient> {
    if (options === null || typeof options !== 'object' || options.connection === undefined) {
      throw new SessiondError(
        ErrorCode.InvalidOption,
        'SessiondClient.connect needs { connection }: an open NatsConnection or options such as { servers, user, pass }.',
      );
    }
    const timeoutMs = wholeNumber('SessiondClient', 'requestTimeoutMs', options.requestTimeoutMs, DEFAULT_REQUEST_TIMEOUT_MS);
    const attemptTimeoutMs = Math.min(timeoutMs, wholeNumber('SessiondClient', 'attemptTimeoutMs', options.attemptTimeoutMs, DEFAULT_ATTEMPT_TIMEOUT_MS));
    const noWorkerRetryMs =
      options.noWorkerRetryMs === 0 ? 0 : wholeNumber('SessiondClient', 'noWorkerRetryMs', options.noWorkerRetryMs, DEFAULT_NO_WORKER_RETRY_MS);
    const tenant = options.tenant === undefined ? undefined : validateTenant(options.tenant);
    const given = isNatsConnection(options.connection);
    const nc = given
      ? (options.connection as NatsConnection)
      : await connectNats({
          name: 'sessiond-client',
          ...(tenant === undefined ? {} : { inboxPrefix: subjects.tenantInbox(tenant) }),
          ...(options.connection as NatsConnectionOptions),
        });
    const user = given ? undefined : (options.connection as NatsConnectionOptions).user;
    const client = new SessiondClient(
      nc,
      !given,
      timeoutMs,
      attemptTimeoutMs,
      noWorkerRetryMs,
      options.stream ?? STREAM_NAME,
      options.ids ?? randomIds,
      user,
      options.clock ?? systemClock,
    );
    client.tenant = tenant;
    return client;
  }

  /** Admits a prompt (idempotent by input id; one is generated when absent) and, unless `wake: false`, wakes the session. */
  async admit(sessionId: string, request: Omit<AdmitCommand, 'sessionId'>): Promise<AdmitReceipt> {
    const body: AdmitCommand = { ...request, sessionId, id: request.id ?? this.ids.next('inp') };
    // Sent again after an attempt a worker took and did not answer (a frozen worker, a server
    // restart): finding the same input already admitted means that attempt admitted it, for this
    // call. Sent again too when the session moved under the worker more often than it retries
    // (many writers at once, `sequence_conflict`): an admission is idempotent by its id.
    let resentEver = false;
    for (let attempt = 1; ; attempt++) {
      try {
        const { result, resent } = await this.send('admit', body);
        resentEver ||= resent;
        return resentEver && !result.receipt.created ? { ...result.receipt, created: true } : result.receipt;
      } catch (err) {
        if (!isCommandError(err, ErrorCode.SequenceConflict) || attempt >= ADMIT_CONFLICT_ATTEMPTS) throw err;
        resentEver = true;
        await new Promise<void>((r) => {
          this.clock.setTimeout(r, attempt * 10 + Math.random() * attempt * 20);
        });
      }
    }
  }

  /** Asks a worker to run the session's pending inputs; says what happened (started, nothing pending, refused...). */
  wake(sessionId: string): Promise<WakeResult> {
    return this.request('wake', { sessionId }).then((r) => r.result);
  }

  /**
   * Cancels the session's execution in progress, wherever it runs. The cancel names that execution
   * (asked with `status` first unless given), so an attempt sent again, or held by a frozen worker
   * and run late, never stops a later turn. When an earlier attempt reached a worker that did not
   * answer in time and the last one found nothing to cancel, the earlier one may have cancelled it:
   * the session's status says, and a cancelled execution is reported as cancelled.
   */
  async cancel(sessionId: string, reason?: string, executionId?: string, options: ActorOptions = {}): Promise<CancelResult> {
    let target = executionId;
    if (target === undefined) {
      // a status this user may not ask, or of a session with no events: the cancel itself says why
      const execution = await this.status(sessionId).then(
        (s) => s.execution,
        (err: unknown) => {
          if (isCommandError(err)) return undefined;
          throw err;
        },
      );
      if (execution && execution.outcome !== null) {
        return { cancelled: false, reason: 'nothing_to_cancel', message: `session ${sessionId} has no execution in progress to cancel` };
      }
      target = execution?.id;
    }
    const { result, resent } = await this.send('cancel', {
      sessionId,
      ...(target === undefined ? {} : { executionId: target }),
      ...(reason === undefined ? {} : { reason }),
      ...(options.actor === undefined ? {} : { actor: options.actor }),
    });
    if (result.result.cancelled || !resent || result.result.reason !== 'nothing_to_cancel') return result.result;
    const { execution } = await this.status(sessionId);
    return execution?.cancelled ? { cancelled: true, executionId: execution.id } : result.result;
  }

  /** Drops the session's pending inputs unrun (all the users' inputs still waiting, or those named); says which. */
  dropPending(sessionId: string, request: DropPendingRequest = {}): Promise<DropPendingResult> {
    return this.request('drop', { sessionId, ...request }).then((r) => r.result);
  }

  /** A person approves a call the session's turn waits for: it runs once when the turn resumes. Idempotent. */
  approve(sessionId: string, callId: string, options: DecisionOptions = {}): Promise<ResolveResult> {
    return this.resolveWait({ sessionId, kind: 'approval', name: callId, outcome: 'approved', ...options });
  }

  /** A person denies a call the session's turn waits for: it never runs, and the model is told why. Idempotent. */
  deny(sessionId: string, callId: string, options: DecisionOptions = {}): Promise<ResolveResult> {
    return this.resolveWait({ sessionId, kind: 'approval', name: callId, outcome: 'denied', ...options });
  }

  /** Delivers the value the session's turn waits for (`ctx.waitFor(name)`). Idempotent. */
  resolve(sessionId: string, name: string, options: { data?: unknown; actor?: string } = {}): Promise<ResolveResult> {
    return this.resolveWait({
      sessionId,
      kind: 'signal',
      name,
      outcome: 'delivered',
      ...(options.data === undefined ? {} : { data: options.data }),
      ...(options.actor === undefined ? {} : { actor: options.actor }),
    });
  }

  private resolveWait(body: CommandRequests['resolve']): Promise<ResolveResult> {
    return this.request('resolve', body).then((r) => r.result);
  }

  /** The session's state, sequence, execution and pending inputs, as a worker sees it in the log. */
  status(sessionId: string, options: { pendingFrom?: number } = {}): Promise<StatusReply> {
    return this.request('status', { sessionId, ...(options.pendingFrom ? { pendingFrom: options.pendingFrom } : {}) });
  }

  /** Changes the session's tags (a value sets a key, null removes it). Idempotent: `changed: false` when it had them. */
  tag(sessionId: string, tags: TagChanges): Promise<TagResult> {
    return this.request('tag', { sessionId, tags: { ...tags } }).then((r) => r.result);
  }

  /** The session's budget and spend; with `tokens`, `costUsd` or `reset`, changes it first (a trusted connection only: a tenant's is refused). */
  budget(sessionId: string, request: BudgetRequest = {}): Promise<BudgetResult> {
    return this.request('budget', { sessionId, ...request }).then((r) => r.result);
  }

  /** Starts `sessionId` as a fork of `sourceId` (see `Sessions.fork`); a worker reads the source and writes the fork. */
  fork(sourceId: string, sessionId: string, options: ForkOptions = {}): Promise<ForkResult> {
    validateId(sourceId, 'source session id');
    validateId(sessionId, 'session id');
    return this.request('fork', {
      sessionId,
      source: sourceId,
      ...(options.at === undefined ? {} : { at: options.at }),
      ...(options.tags ? { tags: { ...options.tags } } : {}),
      ...(options.owner === undefined ? {} : { owner: options.owner }),
    }).then((r) => r.result);
  }

  /** A page of sessions, newest first, from a worker's projection (which follows the stream); `next` pages on. */
  async list(filter: ListFilter = {}): Promise<SessionPage> {
    checkListFilter(filter); // a bad filter is refused here, with the same words a worker would use
    const { sessions, next } = await this.request('list', { ...filter });
    return { sessions, next };
  }

  private async request<V extends CommandVerb>(verb: V, body: CommandRequests[V]): Promise<CommandResults[V]> {
    return (await this.send(verb, body)).result;
  }

  /**
   * Sends the request and waits up to attemptTimeoutMs for a reply, then sends the same body again
   * (it may reach another worker) until the unanswered attempts add up to requestTimeoutMs;
   * while no worker serves the subject (nobody received it), sends it again with backoff for up to
   * noWorkerRetryMs. `resent`: an earlier attempt reached a worker that did not answer in time (it
   * may have run it).
   */
  private async send<V extends CommandVerb>(verb: V, body: CommandRequests[V]): Promise<{ result: CommandResults[V]; resent: boolean }> {
    this.assertOpen();
    if ('sessionId' in body) validateId(body.sessionId, 'session id');
    const subject = this.tenant === undefined ? subjects.command(verb) : subjects.tenantCommand(this.tenant, verb);
    // an admit's caller trace context goes as the W3C traceparent header, as NATS instrumentations carry it
    const { traceparent, ...rest } = body as CommandRequests[V] & { traceparent?: string };
    const traced = verb === 'admit' && typeof traceparent === 'string' ? traceparent : undefined;
    const data = encodeRequest(verb, (traced === undefined ? body : rest) as CommandRequests[V]);
    const hdrs = traced === undefined ? undefined : natsHeaders();
    hdrs?.set('traceparent', traced!);
    const started = this.clock.now();
    let msg: Msg;
    let attempts = 0;
    let unanswered = 0; // ms spent on attempts that someone received and did not answer
    for (let wait = 10; ; ) {
      attempts++;
      const timeout = Math.min(this.attemptTimeoutMs, this.timeoutMs - unanswered);
      try {
        msg = await this.nc.request(subject, data, { timeout, ...(hdrs ? { headers: hdrs } : {}) });
        break;
      } catch (err) {
        const failure = this.noReply(verb, subject, body as { sessionId?: string; id?: string }, err, attempts);
        if (this.nc.isClosed()) throw failure;
        if (failure.failure === CommandFailureCode.Timeout && failure.cause instanceof natsErrors.TimeoutError) {
          unanswered += timeout;
          if (unanswered < this.timeoutMs) continue;
          throw failure;
        }
        // nobody received it: sending it again is safe, until the retry window is spent (the last pause is what is left of it)
        const left = started + this.noWorkerRetryMs - this.clock.now();
        if (failure.failure !== CommandFailureCode.NoWorker || left <= 0) throw failure;
        await new Promise<void>((r) => {
          this.clock.setTimeout(r, Math.min(wait / 2 + (Math.random() * wait) / 2, left));
        });
        wait = Math.min(wait * 2, 500);
      }
    }
    let reply: CommandReply<V>;
    try {
      reply = decodeJson(msg.data) as CommandReply<V>;
    } catch (err) {
      throw new CommandError(
        verb,
        CommandFailureCode.Internal,
        `The reply to ${verb} on ${subject} is not JSON (${messageOf(err)}): is something other than a sessiond worker answering ${subject}?`,
        { cause: err },
      );
    }
    if (reply === null || typeof reply !== 'object' || typeof reply.ok !== 'boolean') {
      throw new CommandError(
        verb,
        CommandFailureCode.Internal,
        `The reply to ${verb} on ${subject} is not a sessiond reply: is something other than a sessiond worker answering ${subject}?`,
      );
    }
    if (!reply.ok) {
      const error = reply.error ?? { code: CommandFailureCode.Internal, message: 'no error given' };
      throw new CommandError(verb, error.code, error.message, error.details ? { details: error.details } : {});
    }
    const { ok: _ok, ...result } = reply;
    return { result: result as unknown as CommandResults[V], resent: unanswered > 0 };
  }

  private noReply(verb: CommandVerb, subject: string, body: { sessionId?: string; id?: string }, err: unknown, attempts: number): CommandError {
    const cause = err instanceof natsErrors.RequestError && err.cause ? err.cause : err;
    if (cause instanceof natsErrors.NoRespondersError) {
      return new CommandError(
        verb,
        CommandFailureCode.NoWorker,
        `No sessiond worker is serving ${subject} on ${this.nc.getServer()}${this.noWorkerRetryMs > 0 ? ` (asked again for ${this.noWorkerRetryMs} ms)` : ''}: start one (sessiond start --nats <url> --nats-user worker --nats-pass <secret>) and retry.`,
        { cause: err },
      );
    }
    if (isPermissionError(err)) {
      return new CommandError(
        verb,
        CommandFailureCode.PermissionDenied,
        `NATS user ${this.user ?? "(this connection's user)"} may not send sessiond commands: nats.conf refuses publishing to ${subject}. Connect as a user allowed to publish sessiond.cmd.> (the client user in nats.conf; workers' own users may not).`,
        { cause: err },
      );
    }
    if (cause instanceof natsErrors.TimeoutError) {
      const retry =
        verb === 'admit' && body.id ? `admit again with the same input id ${body.id} (it is idempotent)` : `check with status before sending ${verb} again`;
      return new CommandError(
        verb,
        CommandFailureCode.Timeout,
        `No reply to ${verb}${body.sessionId === undefined ? '' : ` for session ${body.sessionId}`} within ${this.timeoutMs} ms (sent ${attempts} time${attempts > 1 ? 's' : ''}): the workers may be busy or gone, so the command may or may not have run. To be sure, ${retry}.`,
        { cause },
      );
    }
    if (this.nc.isClosed())
      return new CommandError(verb, ErrorCode.LogClosed, `The NATS connection is closed: connect a new SessiondClient to send ${verb}.`, { cause: err });
    return new CommandError(verb, CommandFailureCode.Timeout, `Sending ${verb} on ${subject} failed: ${messageOf(err)}. Check the NATS connection and retry.`, {
      cause: err,
    });
  }

  /**
   * Subscribes to live events matching `filter` and calls `handler` for each, in arrival order (the
   * next waits for the handler's promise). Resolves once the server has registered the interest;
   * rejects if nats.conf does not let this user subscribe there.
   */
  async subscribe(filter: LiveFilter, handler: LiveHandler, options: LiveSubscribeOptions = {}): Promise<LiveSubscription> {
    this.assertOpen();
    const tenant = this.tenant;
    const subject = tenant === undefined ? subjects.liveFilter(filter) : subjects.tenantLiveFilter(tenant, filter);
    const onInvalid =
      options.onInvalid ?? ((i: InvalidLiveMessage) => process.stderr.write(`sessiond: skipped a live message on ${i.subject}: ${i.error.message}\n`));
    const onError = options.onError ?? ((err: unknown) => process.stderr.write(`sessiond: live subscription on ${subject}: ${messageOf(err)}\n`));
    const dedupe = options.dedupe ?? true;
    const backfill = dedupe && (options.backfill ?? filter.type === undefined);
    if (backfill && filter.type !== undefined) {
      throw new SessiondError(
        ErrorCode.InvalidOption,
        `backfill needs every event type (a type filter makes seqs jump by design): leave out filter.type ${JSON.stringify(filter.type)}, or set backfill: false.`,
      );
    }
    const lastSeq = new Map<string, number>();
    if (options.afterSeq !== undefined) {
      if (filter.sessionId === undefined || !Number.isInteger(options.afterSeq) || options.afterSeq < 0) {
        throw new SessiondError(ErrorCode.InvalidOption, `afterSeq (${String(options.afterSeq)}) needs filter.sessionId and a whole number >= 0.`);
      }
      lastSeq.set(filter.sessionId, options.afterSeq);
    }
    const stats: LiveSubscriptionStats = { delivered: 0, invalid: 0, duplicates: 0, backfilled: 0 };
    const deliver = async (event: LiveMessage) => {
      stats.delivered++;
      try {
        await handler(event);
      } catch (err) {
        safely(
          () => onError(err),
          () => undefined,
        );
      }
    };
    /** The committed events of `sessionId` with last < seq < before, read from the stream. */
    const missing = async (sessionId: string, last: number, before: number): Promise<LiveMessage[]> => {
      try {
        const events = await this.replay({ sessionId, afterSeq: last });
        return events.filter((e) => e.seq < before) as LiveMessage[];
      } catch (err) {
        safely(
          () =>
            onError(
              new SessiondError(
                ErrorCode.LogClosed,
                `Live events ${last + 1}..${before - 1} of session ${sessionId} were missed and could not be read from the stream (${messageOf(err)}); read them with replay({ sessionId, afterSeq: ${last} }).`,
                { cause: err, details: { sessionId, afterSeq: last, beforeSeq: before } },
              ),
            ),
          () => undefined,
        );
        return [];
      }
    };
    const sub: NatsSubscription = this.nc.subscribe(subject);
    let registered = false;
    const refused = (err: Error) =>
      new PermissionError(
        tenant === undefined
          ? `NATS user ${this.user ?? "(this connection's user)"} may not subscribe to ${subject} (${err.message}): nats.conf lets the client and observer users subscribe to sessiond.live.>.`
          : `NATS user ${this.user ?? "(this connection's user)"} may not subscribe to ${subject} (${err.message}): a tenant's user reads its live events when made with the read scope (sessiond setup --tenant ${tenant}), whose block allows ${subjects.tenantLiveFilter(tenant)}.`,
        { cause: err },
      );

    const loop = (async () => {
      for await (const msg of sub) {
        let event: LiveMessage;
        try {
          event = decodeLiveEvent(msg.data, msg.subject, undefined, tenant);
        } catch (err) {
          stats.invalid++;
          const error = err instanceof SessiondError ? err : new SessiondError(ErrorCode.DecodeFailed, messageOf(err), { cause: err });
          const seq = error.details.seq;
          safely(() => onInvalid({ subject: msg.subject, ...(typeof seq === 'number' ? { seq } : {}), error }), onError);
          continue;
        }
        if (dedupe && event.seq !== undefined) {
          const known = lastSeq.get(event.sessionId);
          const last = known ?? 0;
          if (event.seq <= last) {
            stats.duplicates++;
            continue;
          }
          if (backfill && known !== undefined && event.seq > last + 1) {
            for (const e of await missing(event.sessionId, last, event.seq)) {
              stats.backfilled++;
              await deliver(e);
            }
          }
          lastSeq.delete(event.sessionId);
          lastSeq.set(event.sessionId, event.seq);
          if (lastSeq.size > DEFAULT_DEDUPE_SESSIONS) lastSeq.delete(lastSeq.keys().next().value!);
        }
        await deliver(event);
      }
      const ended = await sub.closed;
      // refused at once: subscribe() rejects instead (see below)
      if (ended instanceof Error && registered)
        safely(
          () => onError(isPermissionError(ended) ? refused(ended) : ended),
          () => undefined,
        );
    })();

    await this.nc.flush(); // the server answers a refused SUB before this PING
    if (sub.isClosed()) {
      const ended = await sub.closed;
      await loop;
      if (ended instanceof Error) throw isPermissionError(ended) ? refused(ended) : ended;
    }
    registered = true;
    const subscription: LiveSubscription = {
      subject,
      stats,
      done: loop,
      close: async () => {
        this.subscriptions.delete(subscription);
        if (!sub.isClosed()) sub.unsubscribe();
        await loop;
      },
    };
    this.subscriptions.add(subscription);
    return subscription;
  }

  /**
   * Every committed event of the session after `afterSeq`, in order, each once: read from the
   * stream first, then live (`sessiond.live.<session>.>`), gaps filled from the stream. Committed
   * events only; `subscribe` gives text deltas and other live-only events too.
   */
  follow(sessionId: string, handler: SessionEventHandler, options: FollowOptions = {}): Promise<EventSubscription> {
    this.assertOpen();
    validateId(sessionId, 'session id');
    return followSession(
      {
        read: (id, afterSeq) => this.replay({ sessionId: id, afterSeq }),
        listen: (id, onEvent) =>
          this.subscribe(
            { sessionId: id },
            (m) => {
              if (m.seq !== undefined) onEvent(m as SessionEvent);
            },
            { dedupe: false, ...(options.onError ? { onError: options.onError } : {}) },
          ),
      },
      sessionId,
      handler,
      options,
    );
  }

  /** Committed events from the durable stream (see `ReplayOptions`), in order. */
  async replay(options: ReplayOptions = {}): Promise<SessionEvent[]> {
    this.assertOpen();
    const after = options.after ?? 0;
    const limit = options.limit ?? Infinity;
    if (this.tenant !== undefined) {
      if (options.sessionId === undefined) this.assertNotTenant('replay the whole log (name a session: replay({ sessionId }))');
      const events = await this.events(options.sessionId!, { afterSeq: options.afterSeq ?? 0 }).catch((err: unknown) => {
        if (isSessiondError(err, ErrorCode.NotFound)) return [];
        throw err;
      });
      return events.filter((e) => (e.position ?? 0) > after).slice(0, limit);
    }
    const log = await this.eventLog();
    if (options.sessionId === undefined) {
      return log.readAll({ after, ...(options.limit !== undefined ? { limit: options.limit } : {}) });
    }
    const events = await log.readSession(options.sessionId, { afterSeq: options.afterSeq ?? 0 });
    return events.filter((e) => (e.position ?? 0) > after).slice(0, limit);
  }

  /**
   * The session's committed events after `afterSeq`, in order, at most `limit` (see `Sessions.events`).
   * A trusted user reads them from the stream; a tenant's, page by page from the workers (the
   * `events` command, `EVENTS_PAGE` at a time), its own sessions only.
   */
  async events(sessionId: string, options: EventsOptions = {}): Promise<SessionEvent[]> {
    this.assertOpen();
    const { afterSeq, limit } = checkEventsOptions(options);
    validateId(sessionId, 'session id');
    if (this.tenant === undefined) {
      const log = await this.eventLog();
      const events = await log.readSession(sessionId, { afterSeq, ...(limit === undefined ? {} : { limit }) });
      if (events.length === 0 && (await log.readSession(sessionId, { limit: 1 })).length === 0) throw unknownSession(sessionId, 'read');
      return events;
    }
    const events: SessionEvent[] = [];
    let last = afterSeq;
    for (;;) {
      const want = Math.min(EVENTS_PAGE, (limit ?? Infinity) - events.length);
      const page = await this.request('events', { sessionId, afterSeq: last, limit: want });
      events.push(...page.events);
      if (!page.more || page.events.length === 0 || events.length >= (limit ?? Infinity)) return events;
      last = page.events[page.events.length - 1]!.seq;
    }
  }

  /** The stream as a read-only event log (opened on first use; never creates the stream). */
  eventLog(): Promise<JetStreamEventLog> {
    this.log ??= JetStreamEventLog.open({ connection: this.nc, ensureStream: false, stream: this.stream });
    this.log.catch(() => {
      this.log = undefined;
    });
    return this.log;
  }

  private assertNotTenant(what: string): void {
    if (this.tenant !== undefined)
      throw new PermissionError(
        `A client acting as tenant ${this.tenant} cannot ${what}: a tenant's NATS user has no JetStream (the stream holds every tenant's sessions). It reads its own sessions with events, replay({ sessionId }), follow and subscribe (docs/nats.md, "Tenants").`,
      );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.subscriptions].map((s) => s.close()));
    const log = await this.log?.catch(() => undefined);
    await log?.close();
    if (this.ownsConnection) await this.nc.close().catch(() => undefined);
  }

  private assertOpen(): void {
    if (this.closed) throw new SessiondError(ErrorCode.LogClosed, 'This SessiondClient is closed: connect a new one.');
  }
}

function safely(fn: () => void, onError: (err: unknown) => void): void {
  try {
    fn();
  } catch (err) {
    onError(err);
  }
}
