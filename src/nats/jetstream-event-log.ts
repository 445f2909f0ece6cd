/**
 * `JetStreamEventLog`, the EventLog on NATS JetStream: opens the log (stream created or verified)
 * and composes jetstream-append.ts, jetstream-reads.ts, jetstream-subscription.ts and
 * jetstream-log-base.ts. Design: docs/nats.md#the-jetstream-event-log.
 */
import { wholeNumber } from '../options.ts';
import { jetstream, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { millis, type NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, NotFoundError, SessiondError } from '../errors.ts';
import { systemClock, type Clock } from '../clock.ts';
import { DEFAULT_MAX_PAYLOAD_BYTES } from '../events/codec.ts';
import type { DraftEvent, SessionEvent } from '../events/envelope.ts';
import type { EventLog, ReadPagesOptions, SubscribeOptions, Subscription } from '../events/event-log.ts';
import { connectNats, isNatsConnection, requireJetStream, type NatsConnectionOptions } from './connection.ts';
import { ensureEventStream, isStreamNotFound, DEFAULT_DUPLICATE_WINDOW_MS } from './stream.ts';
import { STREAM_NAME } from './subjects.ts';
import { describeQuarantine, type QuarantineHandler, type QuarantinedMessage } from '../events/quarantine.ts';
import { JetStreamLogBase, type JetStreamEventLogStats, type JetStreamLogSettings } from './jetstream-log-base.ts';
import { JetStreamAppends } from './jetstream-append.ts';
import { JetStreamReads } from './jetstream-reads.ts';
import { JetStreamSubscriptions } from './jetstream-subscription.ts';

export { DEFAULT_READ_BATCH, type JetStreamEventLogStats } from './jetstream-log-base.ts';

/** Wait for one PubAck before retrying the publish. */
export const DEFAULT_PUBLISH_TIMEOUT_MS = 5_000;
/** Keep retrying a publish (same msg id) this long; must stay under the duplicate window. */
export const DEFAULT_PUBLISH_RETRY_MS = DEFAULT_DUPLICATE_WINDOW_MS / 2;
/** Sessions whose tail is cached (the least recently written are dropped). */
export const DEFAULT_TAIL_CACHE_SIZE = 10_000;

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

export class JetStreamEventLog implements EventLog {
  readonly name: string;
  readonly stats: JetStreamEventLogStats;
  private readonly base: JetStreamLogBase;
  private readonly appends: JetStreamAppends;
  private readonly reads: JetStreamReads;
  private readonly subscriptions: JetStreamSubscriptions;

  private constructor(
    readonly nc: NatsConnection,
    private readonly ownsConnection: boolean,
    js: JetStreamClient,
    jsm: JetStreamManager,
    readonly stream: string,
    settings: JetStreamLogSettings,
  ) {
    this.base = new JetStreamLogBase(nc, js, jsm, stream, settings);
    this.name = this.base.name;
    this.stats = this.base.stats;
    // reads start a session from its tail, which the appends cache; the appends find a session's
    // last valid batch (after a quarantined tail) by reading
    this.reads = new JetStreamReads(this.base, (sessionId) => this.appends.loadTail(sessionId));
    this.appends = new JetStreamAppends(this.base, this.reads);
    this.subscriptions = new JetStreamSubscriptions(this.base);
  }

  static async open(options: JetStreamEventLogOptions): Promise<JetStreamEventLog> {
    const given = isNatsConnection(options.connection);
    const nc = given ? (options.connection as NatsConnection) : await connectNats(options.connection as NatsConnectionOptions);
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
      const jsm = await requireJetStream(nc);
      const info =
        (options.ensureStream ?? true)
          ? await ensureEventStream(jsm, {
              name: stream,
              replicas: options.replicas,
              duplicateWindowMs: options.duplicateWindowMs,
              ...(nc.info?.version ? { serverVersion: nc.info.version } : {}),
            })
          : await jsm.streams.info(stream).catch((err: unknown) => {
              throw isStreamNotFound(err)
                ? new NotFoundError(
                    `JetStream stream ${stream} does not exist. Run sessiond setup --nats <url> --nats-user admin once as the operator (it creates the streams; workers only verify them), or open the log with ensureStream.`,
                    { cause: err },
                  )
                : err;
            });
      const windowMs = millis(info.config.duplicate_window);
      if (o.publishRetryMs >= windowMs) {
        throw new SessiondError(
          ErrorCode.InvalidOption,
          `publishRetryMs (${o.publishRetryMs}) must be shorter than stream ${stream}'s duplicate window (${windowMs} ms), or a retried append could be written twice. Lower publishRetryMs or raise the window.`,
        );
      }
      return new JetStreamEventLog(nc, !given, jetstream(nc), jsm, stream, o);
    } catch (err) {
      if (!given) await nc.close().catch(() => undefined);
      throw err;
    }
  }

  append(sessionId: string, expectedSeq: number, drafts: DraftEvent[]): Promise<SessionEvent[]> {
    return this.appends.append(sessionId, expectedSeq, drafts);
  }

  readSession(sessionId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<SessionEvent[]> {
    return this.reads.readSession(sessionId, options);
  }

  lastSeq(sessionId: string): Promise<number> {
    return this.reads.lastSeq(sessionId);
  }

  readAll(options: { after?: number; limit?: number } = {}): Promise<SessionEvent[]> {
    return this.reads.readAll(options);
  }

  head(): Promise<number> {
    return this.reads.head();
  }

  readPages(options: ReadPagesOptions = {}): AsyncIterable<SessionEvent[]> {
    return this.reads.readPages(options);
  }

  subscribe(options: SubscribeOptions): Subscription {
    return this.subscriptions.subscribe(options);
  }

  async close(): Promise<void> {
    if (this.base.closed) return;
    await this.subscriptions.closeAll();
    this.base.markClosed();
    if (this.ownsConnection) await this.nc.close().catch(() => undefined);
  }
}
