/**
 * The EventLog on NATS JetStream (stream from stream.ts, subjects from subjects.ts).
 *
 * One append = one JetStream message on `sessiond.events.<session>`: a msgpack array of event frames
 * (plain maps), so a batch is atomic on NATS 2.9, which has no atomic multi-message publish. The
 * message's stream sequence is the `position` of all its events; `seq` counts events per session.
 *
 * Fencing. Per session we cache the tail: the stream sequence of the session's last message and the
 * last event seq inside it (refreshed from the server with a stream message get by `last_by_subj`).
 * An append checks `expectedSeq` against the tail, then publishes with
 * `Nats-Expected-Last-Subject-Sequence: <tail stream seq>` (0 for a new session), so the server
 * refuses (10071) anything that lost a race, across processes. A refusal is turned into
 * `SequenceConflictError` carrying the real last seq, read back from the server.
 *
 * Dedupe. `Nats-Msg-Id` is the batch's first event id. A publish that times out (or finds the server
 * gone) is retried with the same id and expectation for `publishRetryMs`, less than the stream's
 * duplicate window, so it lands at most once; a duplicate ack is checked against the stored message
 * (same ids: return what is stored; other ids: `duplicate_event`). A retry after the window, with a
 * stale `expectedSeq`, is recognised when its ids are exactly the session's last stored batch.
 * Reusing ids of the session's last batch in a new one is refused before publishing; ids reused from
 * further back are only caught through the msg id, within the window (JetStream has no id index).
 *
 * Outages. The connection reconnects forever. nats.js drops what was sent while disconnected, so a
 * request (publish or read) waits for the reconnect and is sent again at once, up to
 * `publishRetryMs`; then the append fails with `log_closed` saying its outcome is unknown and that
 * retrying the same append is safe.
 *
 * Reads and subscriptions use ordered consumers (the client recreates them after a reconnect at the
 * next stream sequence), one per read, however many pages `readPages` yields; a read stops on the
 * message whose `pending` count is 0, or right away when the consumer starts with nothing pending.
 * The client pulls the next messages only as the read consumes them, so a slow reader holds a few
 * hundred messages, not the stream. Subscriptions hand `onBatch` every message already received (up
 * to `DEFAULT_READ_BATCH`) in one call, and ignore positions they already handled.
 *
 * Quarantine. A stored message that is not a valid batch (only a misbehaving writer can put one
 * there) is skipped by every read and subscription, reported once through `onQuarantine` and
 * counted; a session whose last message is such a one goes on from its last valid batch.
 */
import { wholeNumber } from '../options.ts';
import { DeliverPolicy, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type PubAck, type Consumer, type ConsumerMessages } from '@nats-io/jetstream';
import { millis, type NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, NotFoundError, PermissionError, SessiondError, messageOf, SequenceConflictError } from '../errors.ts';
import { systemClock, type Clock } from '../clock.ts';
import { catalog } from '../events/catalog.ts';
import { DEFAULT_MAX_PAYLOAD_BYTES } from '../events/codec.ts';
import { checkPayloadSizes, prepareBatch } from '../events/prepare-batch.ts';
import type { DraftEvent, SessionEvent } from '../events/envelope.ts';
import {
  duplicateEventError, logClosedError, pageSizeOption,
  type EventLog, type ReadPagesOptions, type SubscribeOptions, type Subscription,
} from '../events/event-log.ts';
import {
  ConnectionWatch, connectNats, isNatsConnection, isPermissionError, isTransientNatsError, waitAtMost,
  type NatsConnectionOptions,
} from './connection.ts';
import {
  decodeBatch, encodeBatch, ensureEventStream, isJsTransient, isStreamNotFound, isWrongLastSequence, DEFAULT_DUPLICATE_WINDOW_MS,
} from './stream.ts';
import { ReadyRuns } from './ready-runs.ts';
import { STREAM_NAME, subjects } from './subjects.ts';
import { describeQuarantine, type QuarantineHandler, type QuarantinedMessage } from '../events/quarantine.ts';

/** Wait for one PubAck before retrying the publish. */
export const DEFAULT_PUBLISH_TIMEOUT_MS = 5_000;
/** Keep retrying a publish (same msg id) this long; must stay under the duplicate window. */
export const DEFAULT_PUBLISH_RETRY_MS = DEFAULT_DUPLICATE_WINDOW_MS / 2;
/** Sessions whose tail is cached (the least recently written are dropped). */
export const DEFAULT_TAIL_CACHE_SIZE = 10_000;
/** Messages per pull for reads and subscriptions, and at most per `onBatch` call. */
export const DEFAULT_READ_BATCH = 256;
/** Room left for headers under the server's max_payload. */
const HEADER_ROOM_BYTES = 1024;
const BACKOFF_MS = [50, 100, 200, 500, 1000, 2000];
/** Consumer notifications after which a subscription starts a new consumer at once. */
const LOST_CONSUMER = new Set(['consumer_deleted', 'consumer_not_found', 'heartbeats_missed', 'stream_not_found']);
/** Quarantined positions remembered to report each once. */
const QUARANTINE_MEMORY = 10_000;

export interface JetStreamEventLogOptions {
  /** An open connection (left open by `close()`) or options to open one (closed by `close()`). */
  connection: NatsConnection | NatsConnectionOptions;
  stream?: string;
  /** Used when the stream is created or updated (see stream.ts). */
  replicas?: number;
  duplicateWindowMs?: number;
  /** Create or verify the stream on open (default true; needs stream-management permission). */
  ensureStream?: boolean;
  maxPayloadBytes?: number;
  publishTimeoutMs?: number;
  publishRetryMs?: number;
  tailCacheSize?: number;
  clock?: Clock;
  /**
   * A stored message that is not a valid event batch was skipped (default: one line on stderr per
   * message). Reads, catch-ups and subscriptions go on past it; see events/quarantine.ts.
   */
  onQuarantine?: QuarantineHandler;
}

/** Counters, for tests and benchmarks. */
export interface JetStreamEventLogStats {
  published: number;
  /** Requests (publishes and reads) sent again after a timeout or an outage. */
  retries: number;
  duplicateAcks: number;
  wrongLastSequence: number;
  retriesRecognised: number;
  /** Stored messages skipped because they are not valid event batches (counted once per position). */
  quarantined: number;
}

/** A session's last message: its stream sequence, last event seq and event ids. */
interface Tail { streamSeq: number; lastSeq: number; ids: string[] }
interface LoadedTail extends Tail { events: SessionEvent[] }
/** One stored message, decoded: no events when it was quarantined. */
interface StoredMessage { seq: number; events: SessionEvent[] }

/** The tail of a session with no message. */
const NO_TAIL: Tail = { streamSeq: 0, lastSeq: 0, ids: [] };

/** Wraps what a subscriber's handler threw, to tell it apart from a failure of the read itself (rethrown as its cause). */
class HandlerError extends SessiondError {
  constructor(cause: unknown) {
    super(ErrorCode.Internal, `a subscriber's handler failed: ${messageOf(cause)}`, { cause });
    this.name = 'HandlerError';
  }
}

export class JetStreamEventLog implements EventLog {
  readonly name: string;
  readonly stats: JetStreamEventLogStats = { published: 0, retries: 0, duplicateAcks: 0, wrongLastSequence: 0, retriesRecognised: 0, quarantined: 0 };
  /** Positions already quarantined (each is reported once). */
  private readonly quarantinedAt = new Set<number>();
  private readonly tails = new Map<string, Tail>();
  private readonly subscriptions = new Set<Subscription>();
  private readonly watch: ConnectionWatch;
  private closed = false;

  private constructor(
    readonly nc: NatsConnection,
    private readonly ownsConnection: boolean,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    readonly stream: string,
    private readonly o: Required<Pick<JetStreamEventLogOptions, 'maxPayloadBytes' | 'publishTimeoutMs' | 'publishRetryMs' | 'tailCacheSize' | 'clock' | 'onQuarantine'>>,
  ) {
    this.name = `nats:${stream}`;
    this.watch = new ConnectionWatch(nc);
  }

  static async open(options: JetStreamEventLogOptions): Promise<JetStreamEventLog> {
    const given = isNatsConnection(options.connection);
    const nc = given ? options.connection as NatsConnection : await connectNats(options.connection as NatsConnectionOptions);
    try {
      const stream = options.stream ?? STREAM_NAME;
      const opt = (name: keyof typeof options, fallback: number) => wholeNumber('JetStream event log', name, options[name], fallback);
      const o = {
        maxPayloadBytes: opt('maxPayloadBytes', DEFAULT_MAX_PAYLOAD_BYTES),
        publishTimeoutMs: opt('publishTimeoutMs', DEFAULT_PUBLISH_TIMEOUT_MS),
        publishRetryMs: opt('publishRetryMs', DEFAULT_PUBLISH_RETRY_MS),
        tailCacheSize: opt('tailCacheSize', DEFAULT_TAIL_CACHE_SIZE),
        clock: options.clock ?? systemClock,
        onQuarantine: options.onQuarantine ?? ((q: QuarantinedMessage) => process.stderr.write(`sessiond: ${describeQuarantine(q)}\n`)),
      };
      const jsm = await jetstreamManager(nc);
      const info = options.ensureStream ?? true
        ? await ensureEventStream(jsm, { name: stream, replicas: options.replicas, duplicateWindowMs: options.duplicateWindowMs, ...(nc.info?.version ? { serverVersion: nc.info.version } : {}) })
        : await jsm.streams.info(stream).catch((err: unknown) => {
          throw isStreamNotFound(err)
            ? new NotFoundError(`JetStream stream ${stream} does not exist. Run sessiond setup --nats <url> --nats-user admin once as the operator (it creates the streams; workers only verify them), or open the log with ensureStream.`, { cause: err })
            : err;
        });
      const windowMs = millis(info.config.duplicate_window);
      if (o.publishRetryMs >= windowMs) {
        throw new SessiondError(ErrorCode.InvalidOption, `publishRetryMs (${o.publishRetryMs}) must be shorter than stream ${stream}'s duplicate window (${windowMs} ms), or a retried append could be written twice. Lower publishRetryMs or raise the window.`);
      }
      return new JetStreamEventLog(nc, !given, jetstream(nc), jsm, stream, o);
    } catch (err) {
      if (!given) await nc.close().catch(() => undefined);
      throw err;
    }
  }

  async append(sessionId: string, expectedSeq: number, drafts: DraftEvent[]): Promise<SessionEvent[]> {
    this.assertOpen();
    const parsed = prepareBatch(sessionId, expectedSeq, drafts, { sizes: 'deferred' });
    const events = parsed.map((d, i) => ({
      id: d.id, type: d.type, version: catalog[d.type].version, sessionId, seq: expectedSeq + i + 1, time: d.time, payload: d.payload,
    }) as SessionEvent);
    // one pack per append: payloads are measured one by one only when the message is over their limit
    const data = encodeBatch(events);
    if (data.byteLength > this.o.maxPayloadBytes) checkPayloadSizes(parsed, this.o.maxPayloadBytes);
    const limit = (this.nc.info?.max_payload ?? 1024 * 1024) - HEADER_ROOM_BYTES;
    if (data.byteLength > limit) {
      throw new SessiondError(ErrorCode.PayloadTooLarge,
        `Append to session ${sessionId} encodes to ${data.byteLength} bytes, over the NATS message limit of ${limit} bytes: append fewer or smaller events at once, or raise max_payload in nats.conf.`,
        { details: { sessionId, size: data.byteLength, max: limit } });
    }
    const subject = subjects.events(sessionId);
    // a session not cached here, appended at 0, is published at once expecting none on its subject:
    // the server refuses it if the session exists, and the refusal is resolved below
    let tail = this.tails.get(sessionId) ?? (expectedSeq === 0 ? NO_TAIL : undefined);
    if (!tail || tail.lastSeq !== expectedSeq) {
      const loaded = await this.loadTail(sessionId);
      if (loaded.lastSeq !== expectedSeq) return this.resolveStale(sessionId, expectedSeq, parsed, loaded);
      tail = loaded;
    }
    // ids of the session's last batch reused in a new one (ids further back are caught only by the msg id)
    const lastIds = tail.ids;
    const reused = parsed.filter((d) => lastIds.includes(d.id)).map((d) => d.id);
    if (reused.length > 0) throw duplicateEventError(sessionId, reused);
    for (let attempt = 1; ; attempt++) {
      let ack: PubAck;
      try {
        ack = await this.publish(subject, data, parsed[0]!.id, tail.streamSeq);
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
        this.stats.wrongLastSequence++;
        const loaded = await this.loadTail(sessionId);
        // our cached stream sequence was stale but the session is where the caller expects: try again
        if (loaded.lastSeq === expectedSeq && attempt === 1) { tail = loaded; continue; }
        return this.resolveStale(sessionId, expectedSeq, parsed, loaded, err);
      }
      if (ack.duplicate) return this.resolveDuplicate(sessionId, expectedSeq, parsed, ack.seq);
      this.stats.published++;
      this.remember(sessionId, { streamSeq: ack.seq, lastSeq: expectedSeq + events.length, ids: events.map((e) => e.id) });
      // the ack carries no stored time: the writer's clock when the ack came back (reads give the server's)
      const committedAt = this.o.clock.now();
      return events.map((e) => ({ ...e, position: ack.seq, committedAt }));
    }
  }

  /** Publishes with the batch's msg id and expectation, resending through outages (never written twice). */
  private publish(subject: string, data: Uint8Array, msgId: string, lastSubjectSequence: number): Promise<PubAck> {
    return this.retrying(
      () => this.js.publish(subject, data, { msgID: msgId, expect: { lastSubjectSequence }, timeout: this.o.publishTimeoutMs }),
      (err) => new SessiondError(ErrorCode.LogClosed,
        `Event log ${this.name} is unreachable: publishing to ${subject} failed for ${this.o.publishRetryMs} ms (${messageOf(err)}). The append may or may not have been written; retry the exact same append (same event ids) once NATS is back and it will not be written twice, or reload the session.`,
        { cause: err, details: { subject, msgId, outcome: 'unknown' } }),
    );
  }

  /** A read-only JetStream request, retried through outages like a publish. */
  private request<T>(fn: () => Promise<T>): Promise<T> {
    return this.retrying(fn, (err) => new SessiondError(ErrorCode.LogClosed,
      `Event log ${this.name} is unreachable: a JetStream request failed for ${this.o.publishRetryMs} ms (${messageOf(err)}). Check that nats-server is running, then retry.`, { cause: err }));
  }

  /**
   * Runs `fn` until it succeeds, a non-transient error, or `publishRetryMs` passes. A request sent
   * while disconnected is lost (nats.js drops it), so while down we wait for the reconnect, and a
   * reconnect during a request resends it at once instead of waiting for its timeout.
   */
  private async retrying<T>(fn: () => Promise<T>, giveUp: (err: unknown) => Error): Promise<T> {
    const deadline = this.o.clock.now() + this.o.publishRetryMs;
    let lastError: unknown = new Error('disconnected from NATS');
    for (let attempt = 0; ; attempt++) {
      this.assertOpen();
      if (!this.watch.connected) {
        const waiter = this.watch.whenReconnected();
        const back = await waitAtMost(waiter.promise, deadline - this.o.clock.now(), this.o.clock);
        waiter.cancel();
        if (!back) throw giveUp(lastError);
        continue;
      }
      const outcome = await this.attempt(fn);
      if ('value' in outcome) return outcome.value;
      if (this.closed || this.nc.isClosed()) throw logClosedError(this.name);
      if ('error' in outcome) {
        if (isPermissionError(outcome.error)) {
          throw new PermissionError(
            `NATS refused a request of event log ${this.name}: ${messageOf(outcome.error)}. The connected user lacks that permission; appending (and lastSeq's fast path) needs a user allowed to publish sessiond.> and $JS.API.> (the worker user in nats.conf).`,
            { cause: outcome.error });
        }
        if (!isTransientNatsError(outcome.error) && !isJsTransient(outcome.error)) throw outcome.error;
        lastError = outcome.error;
      }
      const wait = 'reconnected' in outcome ? 0 : BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]!;
      if (this.o.clock.now() + wait >= deadline) throw giveUp(lastError);
      this.stats.retries++;
      if (wait > 0) await waitAtMost(new Promise<never>(() => undefined), wait, this.o.clock);
    }
  }

  /** `fn()`'s outcome, or `reconnected` when the connection comes back first (the request is then lost). */
  private attempt<T>(fn: () => Promise<T>): Promise<{ value: T } | { error: unknown } | { reconnected: true }> {
    return new Promise((resolve) => {
      const drop = this.watch.onNextReconnect(() => resolve({ reconnected: true }));
      fn().then(
        (value) => { drop(); resolve({ value }); },
        (error: unknown) => { drop(); resolve({ error }); },
      );
    });
  }

  /**
   * The events of one stored message, or none when it is not a valid batch: then it is quarantined
   * (reported once per position, counted) and the caller goes on past it.
   */
  private decode(data: Uint8Array, position: number, subject: string, stored: Date): SessionEvent[] {
    try {
      return decodeBatch(data, position, subject, stored.getTime());
    } catch (err) {
      if (!(err instanceof SessiondError)) throw err;
      if (!this.quarantinedAt.has(position)) {
        if (this.quarantinedAt.size >= QUARANTINE_MEMORY) this.quarantinedAt.delete(this.quarantinedAt.values().next().value!);
        this.quarantinedAt.add(position);
        this.stats.quarantined++;
        this.o.onQuarantine({
          position, subject, sessionId: subjects.sessionOfEventsSubject(subject), code: err.code, message: err.message, size: data.byteLength,
        });
      }
      return [];
    }
  }

  /** expectedSeq is stale: the exact same batch already committed is a retry; anything else conflicts. */
  private resolveStale(sessionId: string, expectedSeq: number, drafts: DraftEvent[], tail: LoadedTail, cause?: unknown): SessionEvent[] {
    const stored = tail.events;
    if (sameIds(stored, drafts) && stored[0]!.seq === expectedSeq + 1) {
      this.stats.retriesRecognised++;
      return stored;
    }
    const reused = drafts.filter((d) => stored.some((e) => e.id === d.id)).map((d) => d.id);
    if (reused.length > 0) throw duplicateEventError(sessionId, reused);
    throw new SequenceConflictError(sessionId, expectedSeq, tail.lastSeq, cause);
  }

  /** The server already has a message with this batch's msg id: the same batch, or reused ids. */
  private async resolveDuplicate(sessionId: string, expectedSeq: number, drafts: DraftEvent[], streamSeq: number): Promise<SessionEvent[]> {
    this.stats.duplicateAcks++;
    const stored = await this.request(() => this.jsm.streams.getMessage(this.stream, { seq: streamSeq }));
    const events = stored ? this.decode(stored.data, stored.seq, stored.subject, stored.time) : [];
    if (events[0]?.sessionId === sessionId && events[0].seq === expectedSeq + 1 && sameIds(events, drafts)) {
      this.stats.retriesRecognised++;
      return events;
    }
    throw duplicateEventError(sessionId, drafts.filter((d) => events.some((e) => e.id === d.id)).map((d) => d.id));
  }

  /** Reads the session's last message from the server (leader-consistent) and caches it. */
  private async loadTail(sessionId: string): Promise<LoadedTail> {
    const subject = subjects.events(sessionId);
    const sm = await this.request(() => this.jsm.streams.getMessage(this.stream, { last_by_subj: subject }));
    let events = sm ? this.decode(sm.data, sm.seq, sm.subject, sm.time) : [];
    // a quarantined last message: the session goes on from its last valid batch, and the next append
    // still expects the subject's real last stream sequence
    if (sm && events.length === 0) events = await this.lastValidBatch(subject);
    const tail = { streamSeq: sm?.seq ?? 0, lastSeq: events[events.length - 1]?.seq ?? 0, ids: events.map((e) => e.id) };
    this.remember(sessionId, tail);
    return { ...tail, events };
  }

  /** The session's last valid batch, found by reading its whole subject (after a quarantined tail). */
  private async lastValidBatch(subject: string): Promise<SessionEvent[]> {
    let last: SessionEvent[] = [];
    await this.scan(1, subject, (events) => { if (events.length > 0) last = events; return true; });
    return last;
  }

  private remember(sessionId: string, tail: Tail): void {
    const known = this.tails.get(sessionId);
    if (known && known.streamSeq > tail.streamSeq) return; // never move backwards
    this.tails.delete(sessionId);
    this.tails.set(sessionId, tail);
    if (this.tails.size > this.o.tailCacheSize) this.tails.delete(this.tails.keys().next().value!);
  }

  async readSession(sessionId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<SessionEvent[]> {
    const subject = subjects.events(sessionId);
    const afterSeq = options.afterSeq ?? 0;
    const limit = options.limit ?? Infinity;
    const out: SessionEvent[] = [];
    if (limit <= 0) return out;
    if (afterSeq > 0) {
      // Catching up (the engine's usual read): the session's last message, one request, often
      // holds everything after `afterSeq`; only a longer gap needs a consumer over the subject.
      // Without this every catch-up re-read the session's whole history (turns slowed down as
      // sessions grew; found by the benchmarks).
      const tail = await this.loadTail(sessionId).catch((err: unknown) => {
        if (isPermissionError((err as Error).cause)) return undefined; // read-only users: scan below
        throw err;
      });
      if (tail && tail.lastSeq <= afterSeq) return out;
      if (tail && tail.events.length > 0 && tail.events[0]!.seq <= afterSeq + 1) {
        for (const e of tail.events) if (e.seq > afterSeq && out.length < limit) out.push(e);
        return out;
      }
    }
    await this.scan(1, subject, (events) => {
      for (const e of events) if (e.seq > afterSeq && out.length < limit) out.push(e);
      return out.length < limit;
    });
    return out;
  }

  async lastSeq(sessionId: string): Promise<number> {
    try {
      return (await this.loadTail(sessionId)).lastSeq;
    } catch (err) {
      if (!isPermissionError((err as Error).cause)) throw err;
      // users that may only use consumers (client, observer in nats.conf): read the last message with one
      let last = 0;
      const subject = subjects.events(sessionId);
      await this.scan('last', subject, (events) => { last = events[events.length - 1]?.seq ?? -1; return true; });
      if (last === -1) last = (await this.lastValidBatch(subject)).at(-1)?.seq ?? 0; // the last message is quarantined
      return last;
    }
  }

  async readAll(options: { after?: number; limit?: number } = {}): Promise<SessionEvent[]> {
    const limit = options.limit ?? Infinity;
    const out: SessionEvent[] = [];
    if (limit <= 0) return out;
    await this.scan((options.after ?? 0) + 1, undefined, (events) => {
      // whole messages only: stop before one that would go over the limit (but always return one)
      if (out.length > 0 && out.length + events.length > limit) return false;
      out.push(...events);
      return out.length < limit;
    });
    return out;
  }

  async head(): Promise<number> {
    const info = await this.request(() => this.jsm.streams.info(this.stream));
    return info.state.last_seq;
  }

  /** Visits the messages `stored()` reads, until `visit` says stop. */
  private async scan(start: number | 'last', filter: string | undefined, visit: (events: SessionEvent[]) => boolean): Promise<void> {
    for await (const message of this.stored(start, filter)) if (!visit(message.events)) return;
  }

  readPages(options: ReadPagesOptions = {}): AsyncIterable<SessionEvent[]> {
    return this.pages(options.after ?? 0, pageSizeOption(options.pageSize));
  }

  /** Whole messages gathered into pages of at most `pageSize` events (a larger message alone). */
  private async *pages(after: number, pageSize: number): AsyncGenerator<SessionEvent[]> {
    let page: SessionEvent[] = [];
    for await (const { events } of this.stored(after + 1, undefined)) {
      if (page.length > 0 && page.length + events.length > pageSize) {
        yield page;
        page = [];
      }
      for (const e of events) page.push(e);
      if (page.length >= pageSize) {
        yield page;
        page = [];
      }
    }
    if (page.length > 0) yield page;
  }

  /**
   * The stream's messages from `start` (a stream sequence, or the subject's last message), decoded,
   * through one ordered consumer until none is pending. A reconnect mid-read would stall the ordered
   * consumer for 30 s (see subscribe): on a reconnect the read ends its consumer and goes on with a
   * new one from the next message. Leaving the loop early ends the consumer.
   */
  private async *stored(start: number | 'last', filter: string | undefined): AsyncGenerator<StoredMessage> {
    this.assertOpen();
    for (let from = start; ;) {
      const consumer = await this.request(() => this.js.consumers.get(this.stream, {
        ...(from === 'last' ? { deliver_policy: DeliverPolicy.Last } : { opt_start_seq: Math.max(1, from) }),
        ...(filter ? { filter_subjects: filter } : {}),
      }));
      let messages: ConsumerMessages | undefined;
      let reconnected = false;
      let dropWaiter = () => {};
      try {
        if ((await consumer.info(true)).num_pending === 0) return;
        messages = await consumer.consume({ max_messages: DEFAULT_READ_BATCH });
        const current = messages;
        dropWaiter = this.watch.onNextReconnect(() => { reconnected = true; current.close().catch(() => undefined); });
        for await (const m of messages) {
          from = m.seq + 1;
          yield { seq: m.seq, events: this.decode(m.data, m.seq, m.subject, m.time) };
          if (m.info.pending === 0) return;
        }
        if (reconnected && !this.closed && !this.nc.isClosed()) continue;
        throw this.closed || this.nc.isClosed() ? logClosedError(this.name)
          : new SessiondError(ErrorCode.LogClosed, `Reading ${this.name} stopped before the end of the stream. Retry the read.`);
      } finally {
        dropWaiter();
        await messages?.close();
        consumer.delete().catch(() => undefined);
      }
    }
  }

  subscribe(options: SubscribeOptions): Subscription {
    this.assertOpen();
    let position = options.after ?? 0;
    let stopped = false;
    let messages: ConsumerMessages | undefined;
    let stop: () => void = () => undefined;
    const stopping = new Promise<void>((resolve) => { stop = resolve; });
    const onError = options.onError ?? ((err: unknown) => process.stderr.write(`sessiond: subscriber on ${this.name} stopped: ${String(err)}\n`));
    const run = async () => {
      for (let failures = 0; !stopped; failures++) {
        let consumer: Consumer | undefined;
        messages = undefined;
        try {
          consumer = await this.js.consumers.get(this.stream, { opt_start_seq: position + 1 });
          messages = await consumer.consume({ max_messages: DEFAULT_READ_BATCH });
          if (stopped) break;
          // After a reconnect, nats.js's ordered consumer checks itself with a consumer info; when
          // that fails (JetStream still starting after a server restart) it retries only after the
          // pull's `expires` (30 s), and the subscription (projector, wakes, live delivery) stalled
          // that long (test/nats/multinode.test.ts). So on a reconnect we end this consumer and start
          // a new one after `position` below, retrying with our own short backoff.
          const current = messages;
          void this.watch.nextReconnect().then(() => current.close()).catch(() => undefined);
          // Likewise when the consumer is gone (deleted by someone else, or the server lost it): the
          // ordered consumer would notice only after missed heartbeats (tens of seconds), so end it
          // at once and start a new one after `position` (test/nats/attacks.test.ts).
          void (async () => {
            for await (const status of current.status()) {
              if (LOST_CONSUMER.has(status.type)) { await current.close(); break; }
            }
          })().catch(() => undefined);
          // what has arrived is handed over at once: a subscriber that catches up folds many
          // messages per call (one transaction for the projector) instead of one per message
          const runs = new ReadyRuns(messages[Symbol.asyncIterator]());
          for (let run = await runs.next(DEFAULT_READ_BATCH); run.length > 0 && !stopped; run = await runs.next(DEFAULT_READ_BATCH)) {
            const events: SessionEvent[] = [];
            let last = position;
            for (const m of run) {
              if (m.seq <= last) continue; // already delivered before a reset
              for (const e of this.decode(m.data, m.seq, m.subject, m.time)) events.push(e);
              last = m.seq;
            }
            if (events.length > 0) {
              try {
                await options.onBatch(events);
              } catch (err) {
                throw new HandlerError(err);
              }
            }
            position = last;
            failures = 0;
          }
        } catch (err) {
          if (err instanceof HandlerError) throw err.cause;
        } finally {
          await messages?.close();
          consumer?.delete().catch(() => undefined);
        }
        if (stopped) break;
        if (this.nc.isClosed()) throw logClosedError(this.name);
        // the consumer ended or could not be created (server gone too long): start again after `position`
        await waitAtMost(Promise.race([stopping, this.watch.nextReconnect()]), BACKOFF_MS[Math.min(failures, BACKOFF_MS.length - 1)]!, this.o.clock);
      }
    };
    const done = run().catch((err) => { if (!stopped) { stopped = true; onError(err); } });
    const sub: Subscription = {
      get position() { return position; },
      close: async () => {
        stopped = true;
        stop();
        await messages?.close();
        await done;
        this.subscriptions.delete(sub);
      },
    };
    this.subscriptions.add(sub);
    return sub;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await Promise.all([...this.subscriptions].map((s) => s.close()));
    this.closed = true;
    this.watch.stop();
    if (this.ownsConnection) await this.nc.close().catch(() => undefined);
  }

  private assertOpen(): void {
    if (this.closed) throw logClosedError(this.name);
  }
}

function sameIds(a: { id: string }[], b: { id: string }[]): boolean {
  return a.length === b.length && a.every((e, i) => e.id === b[i]!.id);
}
