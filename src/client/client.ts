/**
 * `SessiondClient`, the typed client over NATS: composes the commands and their resends (commands.ts),
 * live events (live-subscription.ts) and replay (replay.ts). Why: docs/nats.md#the-client.
 *
 *   const client = await SessiondClient.connect({ connection: { servers, user: 'client', pass } });
 */
import type { DropPendingRequest, DropPendingResult } from '../input/drop.ts';
import type { ResolveResult } from '../input/resolve.ts';
import { systemClock, type Clock } from '../clock.ts';
import { wholeNumber } from '../options.ts';
import type { NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, SessiondError } from '../errors.ts';
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
import { connectNats, isNatsConnection, type NatsConnectionOptions } from '../nats/connection.ts';
import type { JetStreamEventLog } from '../nats/jetstream-event-log.ts';
import type { LiveFilter } from '../events/live-bus.ts';
import type { AdmitCommand, BlobReference as BlobRef, CommandRequests, CommandResults, StatusReply, WakeResult } from '../nats/command-protocol.ts';
import { STREAM_NAME, subjects, validateTenant, type CommandVerb } from '../nats/subjects.ts';
import { CommandSender, type CommandSettings, DEFAULT_ATTEMPT_TIMEOUT_MS, DEFAULT_NO_WORKER_RETRY_MS, DEFAULT_REQUEST_TIMEOUT_MS } from './commands.ts';
import { LiveSubscriptions, type LiveHandler, type LiveSubscribeOptions, type LiveSubscription } from './live-subscription.ts';
import { HistoryReader, type ReplayOptions } from './replay.ts';
import { readBlob, readBlobChunks, uploadBlob, uploadLargeParts, type UploadOptions, type UploadSource } from './blobs.ts';

export type { LiveFilter };
export type { InvalidLiveMessage, LiveHandler, LiveSubscribeOptions, LiveSubscription, LiveSubscriptionStats } from './live-subscription.ts';
export type { ReplayOptions } from './replay.ts';

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

export class SessiondClient implements Sessions {
  private closed = false;
  private readonly commands: CommandSender;
  private readonly live: LiveSubscriptions;
  private readonly history: HistoryReader;

  private constructor(
    readonly nc: NatsConnection,
    private readonly ownsConnection: boolean,
    private readonly ids: IdSource,
    settings: Omit<CommandSettings, 'tenant' | 'assertOpen'> & { stream: string },
    /** The tenant this client acts as (`SessiondClientOptions.tenant`). */
    tenant: string | undefined,
  ) {
    const { stream, user } = settings;
    this.commands = new CommandSender(nc, { ...settings, tenant, assertOpen: () => this.assertOpen() });
    this.history = new HistoryReader(nc, stream, tenant, this.commands);
    this.live = new LiveSubscriptions(nc, { tenant, user, read: (sessionId, afterSeq) => this.replay({ sessionId, afterSeq }) });
  }

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
    const settings = { timeoutMs, attemptTimeoutMs, noWorkerRetryMs, stream: options.stream ?? STREAM_NAME, user, clock: options.clock ?? systemClock };
    return new SessiondClient(nc, !given, options.ids ?? randomIds, settings, tenant);
  }

  /**
   * Admits a prompt (idempotent by input id; one is generated when absent) and, unless `wake: false`,
   * wakes the session. An inline image or file part over `INLINE_PART_BYTES` is uploaded first
   * (`uploadBlob`) and sent as its reference.
   */
  async admit(sessionId: string, request: Omit<AdmitCommand, 'sessionId'>): Promise<AdmitReceipt> {
    const id = request.id ?? this.ids.next('inp');
    const prompt = await uploadLargeParts(request.prompt, (bytes, mediaType) =>
      this.uploadBlob(bytes, { mediaType, ...(request.owner === undefined ? {} : { owner: request.owner }) }),
    );
    return this.commands.admit({ ...request, prompt, sessionId, id });
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
  cancel(sessionId: string, reason?: string, executionId?: string, options: ActorOptions = {}): Promise<CancelResult> {
    return this.commands.cancel(sessionId, reason, executionId, options);
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

  /**
   * Uploads bytes (whole, or a stream of chunks) as a blob through the workers (the `upload`
   * command, in chunks that each stay well under NATS's max_payload) and returns its reference, to
   * send as a prompt part: `{ type: 'image', blob: ref }`. Refused: over the workers' maxBlobBytes
   * (`payload_too_large`), bytes whose media type their signature contradicts (`invalid_payload`).
   */
  async uploadBlob(source: UploadSource, options: UploadOptions): Promise<BlobRef> {
    this.assertOpen();
    return uploadBlob((verb, body) => this.request(verb, body), this.ids.next('upl'), source, options);
  }

  /**
   * The bytes of a blob that session `sessionId` references (its sha256, or the reference), read
   * in chunks through the workers (the `blob` command) and checked against the hash. `not_found`
   * when the session does not reference it or is not this user's to read.
   */
  async readBlob(sessionId: string, blob: string | Pick<BlobRef, 'sha256'>): Promise<Uint8Array> {
    this.assertOpen();
    validateId(sessionId, 'session id');
    return readBlob((verb, body) => this.request(verb, body), sessionId, blob);
  }

  /**
   * One chunk of the blob from `offset` as the `blob` command answers it (its media type, size,
   * whether more follow, and `seq`, the event referencing it: give it back for the next chunk).
   */
  async blobChunk(sessionId: string, sha256: string, offset = 0, seq?: number): Promise<CommandResults['blob']> {
    this.assertOpen();
    return this.request('blob', { sessionId, sha256, ...(offset > 0 ? { offset } : {}), ...(seq === undefined ? {} : { seq }) });
  }

  /** `readBlob` chunk by chunk (at most `MAX_BLOB_READ_BYTES` each), the hash checked after the last. */
  readBlobChunks(sessionId: string, blob: string | Pick<BlobRef, 'sha256'>): AsyncIterable<Uint8Array> {
    this.assertOpen();
    validateId(sessionId, 'session id');
    return readBlobChunks((verb, body) => this.request(verb, body), sessionId, blob);
  }

  private request<V extends CommandVerb>(verb: V, body: CommandRequests[V]): Promise<CommandResults[V]> {
    return this.commands.request(verb, body);
  }

  /**
   * Subscribes to live events matching `filter` and calls `handler` for each, in arrival order (the
   * next waits for the handler's promise). Resolves once the server has registered the interest;
   * rejects if nats.conf does not let this user subscribe there.
   */
  async subscribe(filter: LiveFilter, handler: LiveHandler, options: LiveSubscribeOptions = {}): Promise<LiveSubscription> {
    this.assertOpen();
    return this.live.subscribe(filter, handler, options);
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
    return this.history.replay(options);
  }

  /**
   * The session's committed events after `afterSeq`, in order, at most `limit` (see `Sessions.events`).
   * A trusted user reads them from the stream; a tenant's, page by page from the workers (the
   * `events` command, `EVENTS_PAGE` at a time), its own sessions only.
   */
  async events(sessionId: string, options: EventsOptions = {}): Promise<SessionEvent[]> {
    this.assertOpen();
    return this.history.events(sessionId, options);
  }

  /** The stream as a read-only event log (opened on first use; never creates the stream). */
  eventLog(): Promise<JetStreamEventLog> {
    return this.history.eventLog();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.live.closeAll();
    await this.history.close();
    if (this.ownsConnection) await this.nc.close().catch(() => undefined);
  }

  private assertOpen(): void {
    if (this.closed) throw new SessiondError(ErrorCode.LogClosed, 'This SessiondClient is closed: connect a new one.');
  }
}
