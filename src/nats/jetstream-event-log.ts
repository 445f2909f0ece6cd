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
 *
 * Reads and subscriptions use ordered consumers (the client recreates them after a reconnect at the
 * next stream sequence); a read stops on the message whose `pending` count is 0, or right away when
 * the consumer starts with nothing pending. Subscriptions also ignore positions they already handled.
 */
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type PubAck, type Consumer, type ConsumerMessages } from '@nats-io/jetstream';
import { errors as natsErrors, type NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, SessiondError, messageOf } from '../errors.ts';
import { validateId } from '../ids.ts';
import { systemClock, type Clock } from '../clock.ts';
import { catalog, isDurable, isEventType } from '../events/catalog.ts';
import { parseDraft, parsePayload, pack, unpack, DEFAULT_MAX_PAYLOAD_BYTES } from '../events/codec.ts';
import type { DraftEvent, SessionEvent } from '../events/envelope.ts';
import {
  SequenceConflictError, duplicateEventError, logClosedError,
  type EventLog, type SubscribeOptions, type Subscription,
} from '../events/event-log.ts';
import { connectNats, type NatsConnectionOptions } from './connection.ts';
import { ensureEventStream, isJsTransient, isWrongLastSequence, DEFAULT_DUPLICATE_WINDOW_MS } from './stream.ts';
import { STREAM_NAME, subjects } from './subjects.ts';

/** Wait for one PubAck before retrying the publish. */
export const DEFAULT_PUBLISH_TIMEOUT_MS = 5_000;
/** Keep retrying a publish (same msg id) this long; must stay under the duplicate window. */
export const DEFAULT_PUBLISH_RETRY_MS = DEFAULT_DUPLICATE_WINDOW_MS / 2;
/** Sessions whose tail is cached (least recently used are dropped). */
export const DEFAULT_TAIL_CACHE_SIZE = 10_000;
/** Messages per pull for reads and subscriptions. */
export const DEFAULT_READ_BATCH = 256;
/** Room left for headers under the server's max_payload. */
const HEADER_ROOM_BYTES = 1024;
const BACKOFF_MS = [50, 100, 200, 500, 1000, 2000];

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
}

/** Counters, for tests and benchmarks. */
export interface JetStreamEventLogStats {
  published: number;
  publishRetries: number;
  duplicateAcks: number;
  wrongLastSequence: number;
  retriesRecognised: number;
}

/** A session's last message: its stream sequence, last event seq and event ids. */
interface Tail { streamSeq: number; lastSeq: number; ids: string[] }
interface LoadedTail extends Tail { events: SessionEvent[] }

class HandlerError extends Error {}

export class JetStreamEventLog implements EventLog {
  readonly name: string;
  readonly stats: JetStreamEventLogStats = { published: 0, publishRetries: 0, duplicateAcks: 0, wrongLastSequence: 0, retriesRecognised: 0 };
  private readonly tails = new Map<string, Tail>();
  private readonly subscriptions = new Set<Subscription>();
  private closed = false;

  private constructor(
    readonly nc: NatsConnection,
    private readonly ownsConnection: boolean,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    readonly stream: string,
    private readonly o: Required<Pick<JetStreamEventLogOptions, 'maxPayloadBytes' | 'publishTimeoutMs' | 'publishRetryMs' | 'tailCacheSize' | 'clock'>>,
  ) {
    this.name = `nats:${stream}`;
  }

  static async open(options: JetStreamEventLogOptions): Promise<JetStreamEventLog> {
    const given = isNatsConnection(options.connection);
    const nc = given ? options.connection as NatsConnection : await connectNats(options.connection as NatsConnectionOptions);
    try {
      const stream = options.stream ?? STREAM_NAME;
      const publishRetryMs = options.publishRetryMs ?? DEFAULT_PUBLISH_RETRY_MS;
      const windowMs = options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS;
      if (publishRetryMs >= windowMs) {
        throw new SessiondError(ErrorCode.InvalidOption, `publishRetryMs (${publishRetryMs}) must be shorter than the duplicate window (${windowMs} ms), or a retried append could be written twice.`);
      }
      const jsm = await jetstreamManager(nc);
      if (options.ensureStream ?? true) {
        await ensureEventStream(jsm, { name: stream, replicas: options.replicas, duplicateWindowMs: windowMs });
      } else {
        await jsm.streams.info(stream);
      }
      return new JetStreamEventLog(nc, !given, jetstream(nc), jsm, stream, {
        maxPayloadBytes: options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
        publishTimeoutMs: options.publishTimeoutMs ?? DEFAULT_PUBLISH_TIMEOUT_MS,
        publishRetryMs,
        tailCacheSize: options.tailCacheSize ?? DEFAULT_TAIL_CACHE_SIZE,
        clock: options.clock ?? systemClock,
      });
    } catch (err) {
      if (!given) await nc.close().catch(() => undefined);
      throw err;
    }
  }

  async append(sessionId: string, expectedSeq: number, drafts: DraftEvent[]): Promise<SessionEvent[]> {
    this.assertOpen();
    const parsed = prepareBatch(sessionId, expectedSeq, drafts, this.o.maxPayloadBytes);
    const subject = subjects.events(sessionId);
    let tail = this.tails.get(sessionId);
    if (!tail || tail.lastSeq !== expectedSeq) {
      const loaded = await this.loadTail(sessionId);
      if (loaded.lastSeq !== expectedSeq) return this.resolveStale(sessionId, expectedSeq, parsed, loaded);
      tail = loaded;
    }
    // ids of the session's last batch reused in a new one (ids further back are caught only by the msg id)
    const lastIds = tail.ids;
    const reused = parsed.filter((d) => lastIds.includes(d.id)).map((d) => d.id);
    if (reused.length > 0) throw duplicateEventError(sessionId, reused);
    const events = parsed.map((d, i) => ({
      id: d.id, type: d.type, version: catalog[d.type].version, sessionId, seq: expectedSeq + i + 1, time: d.time, payload: d.payload,
    }) as SessionEvent);
    const data = encodeBatch(events);
    const limit = (this.nc.info?.max_payload ?? 1024 * 1024) - HEADER_ROOM_BYTES;
    if (data.byteLength > limit) {
      throw new SessiondError(ErrorCode.PayloadTooLarge,
        `Append to session ${sessionId} encodes to ${data.byteLength} bytes, over the NATS message limit of ${limit} bytes: append fewer or smaller events at once, or raise max_payload in nats.conf.`,
        { details: { sessionId, size: data.byteLength, max: limit } });
    }
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
      return events.map((e) => ({ ...e, position: ack.seq }));
    }
  }

  /** Publishes, retrying timeouts and outages with the same msg id for up to `publishRetryMs`. */
  private async publish(subject: string, data: Uint8Array, msgId: string, lastSubjectSequence: number): Promise<PubAck> {
    const deadline = this.o.clock.now() + this.o.publishRetryMs;
    for (let attempt = 0; ; attempt++) {
      this.assertOpen();
      try {
        return await this.js.publish(subject, data, { msgID: msgId, expect: { lastSubjectSequence }, timeout: this.o.publishTimeoutMs });
      } catch (err) {
        if (this.closed || this.nc.isClosed()) throw logClosedError(this.name);
        const wait = BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]!;
        if (!isTransient(err)) throw err;
        if (this.o.clock.now() + wait >= deadline) {
          throw new SessiondError(ErrorCode.LogClosed,
            `Event log ${this.name} is unreachable: publishing to ${subject} failed for ${this.o.publishRetryMs} ms (${messageOf(err)}). The append may or may not have been written; retry the exact same append (same event ids) once NATS is back and it will not be written twice, or reload the session.`,
            { cause: err, details: { subject, msgId, outcome: 'unknown' } });
        }
        this.stats.publishRetries++;
        await sleep(wait);
      }
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
    const stored = await this.jsm.streams.getMessage(this.stream, { seq: streamSeq });
    const events = stored ? decodeBatch(stored.data, stored.seq, stored.subject) : [];
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
    const events = sm ? decodeBatch(sm.data, sm.seq, sm.subject) : [];
    const tail = { streamSeq: sm?.seq ?? 0, lastSeq: events[events.length - 1]?.seq ?? 0, ids: events.map((e) => e.id) };
    this.remember(sessionId, tail);
    return { ...tail, events };
  }

  private remember(sessionId: string, tail: Tail): void {
    const known = this.tails.get(sessionId);
    if (known && known.streamSeq > tail.streamSeq) return; // never move backwards
    this.tails.delete(sessionId);
    this.tails.set(sessionId, tail);
    if (this.tails.size > this.o.tailCacheSize) this.tails.delete(this.tails.keys().next().value!);
  }

  /** A read-only JetStream request, retried through short outages; closed logs fail fast. */
  private async request<T>(fn: () => Promise<T>): Promise<T> {
    const deadline = this.o.clock.now() + this.o.publishRetryMs;
    for (let attempt = 0; ; attempt++) {
      this.assertOpen();
      try {
        return await fn();
      } catch (err) {
        if (this.closed || this.nc.isClosed()) throw logClosedError(this.name);
        const wait = BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]!;
        if (!isTransient(err) || this.o.clock.now() + wait >= deadline) throw err;
        await sleep(wait);
      }
    }
  }

  async readSession(sessionId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<SessionEvent[]> {
    const subject = subjects.events(sessionId);
    const afterSeq = options.afterSeq ?? 0;
    const limit = options.limit ?? Infinity;
    const out: SessionEvent[] = [];
    if (limit <= 0) return out;
    await this.scan(1, subject, (events) => {
      for (const e of events) if (e.seq > afterSeq && out.length < limit) out.push(e);
      return out.length < limit;
    });
    return out;
  }

  async lastSeq(sessionId: string): Promise<number> {
    validateId(sessionId, 'session id');
    return (await this.loadTail(sessionId)).lastSeq;
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

  /** Reads messages from `startSeq` with an ordered consumer until nothing is pending or `visit` says stop. */
  private async scan(startSeq: number, filter: string | undefined, visit: (events: SessionEvent[]) => boolean): Promise<void> {
    this.assertOpen();
    const consumer = await this.request(() => this.js.consumers.get(this.stream, {
      opt_start_seq: Math.max(1, startSeq), ...(filter ? { filter_subjects: filter } : {}),
    }));
    let messages: ConsumerMessages | undefined;
    try {
      if ((await consumer.info(true)).num_pending === 0) return;
      messages = await consumer.consume({ max_messages: DEFAULT_READ_BATCH });
      for await (const m of messages) {
        if (!visit(decodeBatch(m.data, m.seq, m.subject)) || m.info.pending === 0) return;
      }
      throw this.closed || this.nc.isClosed() ? logClosedError(this.name)
        : new SessiondError(ErrorCode.LogClosed, `Reading ${this.name} stopped before the end of the stream. Retry the read.`);
    } finally {
      await messages?.close();
      consumer.delete().catch(() => undefined);
    }
  }

  subscribe(options: SubscribeOptions): Subscription {
    this.assertOpen();
    let position = options.after ?? 0;
    let stopped = false;
    let messages: ConsumerMessages | undefined;
    let wake: () => void = () => undefined;
    const onError = options.onError ?? ((err: unknown) => process.stderr.write(`sessiond: subscriber on ${this.name} stopped: ${String(err)}\n`));
    const run = async () => {
      for (let failures = 0; !stopped; failures++) {
        let consumer: Consumer | undefined;
        messages = undefined;
        try {
          consumer = await this.js.consumers.get(this.stream, { opt_start_seq: position + 1 });
          messages = await consumer.consume({ max_messages: DEFAULT_READ_BATCH });
          if (stopped) break;
          for await (const m of messages) {
            if (stopped) break;
            if (m.seq <= position) continue; // already delivered before a reset
            const events = decodeBatch(m.data, m.seq, m.subject);
            try {
              await options.onBatch(events);
            } catch (err) {
              throw new HandlerError('handler failed', { cause: err });
            }
            position = m.seq;
            failures = 0;
          }
        } catch (err) {
          if (err instanceof HandlerError) throw err.cause;
          if (err instanceof SessiondError) throw err; // an undecodable batch: never skip it silently
        } finally {
          await messages?.close();
          consumer?.delete().catch(() => undefined);
        }
        if (stopped) break;
        if (this.nc.isClosed()) throw logClosedError(this.name);
        // the consumer ended (server gone too long, stream recreated): start again after `position`
        await new Promise<void>((resolve) => { wake = resolve; setTimeout(resolve, BACKOFF_MS[Math.min(failures, BACKOFF_MS.length - 1)]); });
      }
    };
    const done = run().catch((err) => { if (!stopped) { stopped = true; onError(err); } });
    const sub: Subscription = {
      get position() { return position; },
      close: async () => {
        stopped = true;
        wake();
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
    if (this.ownsConnection) await this.nc.close().catch(() => undefined);
  }

  private assertOpen(): void {
    if (this.closed) throw logClosedError(this.name);
  }
}

function isNatsConnection(value: unknown): value is NatsConnection {
  return typeof value === 'object' && value !== null && typeof (value as NatsConnection).request === 'function' && typeof (value as NatsConnection).isClosed === 'function';
}

/** Errors after which the same request may be sent again: timeouts, no JetStream responder yet, leader elections. */
function isTransient(err: unknown): boolean {
  if (err instanceof natsErrors.TimeoutError || err instanceof natsErrors.NoRespondersError) return true;
  if (err instanceof natsErrors.RequestError) return !(err.cause instanceof natsErrors.PermissionViolationError);
  if (err instanceof natsErrors.ConnectionError) return true;
  // the server answers "no responders" while JetStream is still starting after a restart
  if (err instanceof Error && err.name === 'JetStreamNotEnabled') return true;
  return isJsTransient(err);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function sameIds(a: { id: string }[], b: { id: string }[]): boolean {
  return a.length === b.length && a.every((e, i) => e.id === b[i]!.id);
}

/** The validation the SQLite log does, identically. */
function prepareBatch(sessionId: string, expectedSeq: number, drafts: DraftEvent[], maxPayloadBytes: number): DraftEvent[] {
  validateId(sessionId, 'session id');
  if (!Number.isInteger(expectedSeq) || expectedSeq < 0) {
    throw new SessiondError(ErrorCode.InvalidOption, `Invalid expectedSeq ${String(expectedSeq)} for session ${sessionId}: use the session's last sequence (0 for a new session).`);
  }
  if (!Array.isArray(drafts) || drafts.length === 0) {
    throw new SessiondError(ErrorCode.InvalidOption, `Append to session ${sessionId} has no events: pass at least one.`);
  }
  return drafts.map((d) => {
    const parsed = parseDraft(d, maxPayloadBytes);
    if (!isDurable(parsed.type)) {
      throw new SessiondError(ErrorCode.InvalidPayload, `Event ${parsed.type} is live-only and is never stored: publish it on the live bus instead of appending it.`, { details: { type: parsed.type } });
    }
    return parsed;
  });
}

/** One append's message body: a msgpack array of plain-map event frames. */
export function encodeBatch(events: SessionEvent[]): Uint8Array {
  return pack(events.map((e) => ({ id: e.id, type: e.type, version: e.version, sessionId: e.sessionId, seq: e.seq, time: e.time, payload: e.payload })));
}

/** Decodes and validates one stored message; every event gets `position` = the message's stream sequence. */
export function decodeBatch(data: Uint8Array, position: number, subject: string): SessionEvent[] {
  const fail = (code: SessiondError['code'], why: string, cause?: unknown): never => {
    throw new SessiondError(code, `Message ${position} on ${subject} is not a sessiond event batch: ${why}. Was it published by something other than sessiond?`, { cause, details: { position, subject } });
  };
  let raw: unknown;
  try {
    raw = unpack(data);
  } catch (err) {
    return fail(ErrorCode.DecodeFailed, `invalid msgpack (${messageOf(err)})`, err);
  }
  if (!Array.isArray(raw) || raw.length === 0) return fail(ErrorCode.DecodeFailed, 'expected a non-empty array of events');
  const sessionId = subjects.sessionOfEventsSubject(subject);
  return raw.map((f: Record<string, unknown> | null, i) => {
    if (f === null || typeof f !== 'object') return fail(ErrorCode.DecodeFailed, `frame ${i} is not a map`);
    const { id, type, version, seq, time } = f;
    if (typeof id !== 'string' || typeof version !== 'number' || typeof seq !== 'number' || typeof time !== 'number') {
      return fail(ErrorCode.DecodeFailed, `frame ${i} lacks id, version, seq or time`);
    }
    if (f.sessionId !== sessionId) return fail(ErrorCode.DecodeFailed, `frame ${i} belongs to session ${String(f.sessionId)}`);
    if (!isEventType(type)) return fail(ErrorCode.UnknownEventType, `frame ${i} has unknown type ${JSON.stringify(type)} (upgrade sessiond)`);
    const first = (raw as { seq: number }[])[0]!.seq;
    if (seq !== first + i) return fail(ErrorCode.DecodeFailed, `frame ${i} has seq ${seq}, expected ${first + i}`);
    return { id, type, version, sessionId, seq, time, payload: parsePayload(type, version, f.payload), position } as SessionEvent;
  });
}
