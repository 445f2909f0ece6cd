/**
 * The client's live subscriptions: messages from the live subjects (core NATS) decoded and checked,
 * committed events deduplicated by seq and gaps filled from the stream, handed over in order.
 * Why: docs/nats.md#live-events.
 */
import type { Msg, NatsConnection, Subscription as NatsSubscription } from '@nats-io/transport-node';
import { ErrorCode, PermissionError, SessiondError, messageOf } from '../errors.ts';
import type { SessionEvent } from '../events/envelope.ts';
import type { LiveFilter } from '../events/live-bus.ts';
import { isPermissionError } from '../nats/connection.ts';
import { decodeLiveEvent, type LiveMessage } from '../nats/live-bus.ts';
import { subjects } from '../nats/subjects.ts';

/** Sessions whose last delivered seq is remembered to drop repeated committed events. */
export const DEFAULT_DEDUPE_SESSIONS = 10_000;

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

export type LiveHandler = (event: LiveMessage) => void | Promise<void>;

/** What the subscriptions need of their client. */
export interface LiveSource {
  tenant: string | undefined;
  /** The NATS user, named in a refusal. */
  user: string | undefined;
  /** The session's committed events after `afterSeq`, from the stream (the client's `replay`). */
  read: (sessionId: string, afterSeq: number) => Promise<SessionEvent[]>;
}

/** The client's open live subscriptions, closed with it. */
export class LiveSubscriptions {
  private readonly open = new Set<LiveSubscription>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly source: LiveSource,
  ) {}

  /** See `SessiondClient.subscribe`. */
  async subscribe(filter: LiveFilter, handler: LiveHandler, options: LiveSubscribeOptions = {}): Promise<LiveSubscription> {
    const { tenant } = this.source;
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
    const delivery = new LiveDelivery(handler, { tenant, dedupe, backfill, onInvalid, onError, read: this.source.read });
    if (options.afterSeq !== undefined) {
      if (filter.sessionId === undefined || !Number.isInteger(options.afterSeq) || options.afterSeq < 0) {
        throw new SessiondError(ErrorCode.InvalidOption, `afterSeq (${String(options.afterSeq)}) needs filter.sessionId and a whole number >= 0.`);
      }
      delivery.delivered(filter.sessionId, options.afterSeq);
    }
    const sub: NatsSubscription = this.nc.subscribe(subject);
    let registered = false;
    const loop = (async () => {
      for await (const msg of sub) await delivery.receive(msg);
      const ended = await sub.closed;
      // refused at once: subscribe() rejects instead (see below)
      if (ended instanceof Error && registered) delivery.report(isPermissionError(ended) ? this.refused(subject, ended) : ended);
    })();

    await this.nc.flush(); // the server answers a refused SUB before this PING
    if (sub.isClosed()) {
      const ended = await sub.closed;
      await loop;
      if (ended instanceof Error) throw isPermissionError(ended) ? this.refused(subject, ended) : ended;
    }
    registered = true;
    const subscription: LiveSubscription = {
      subject,
      stats: delivery.stats,
      done: loop,
      close: async () => {
        this.open.delete(subscription);
        if (!sub.isClosed()) sub.unsubscribe();
        await loop;
      },
    };
    this.open.add(subscription);
    return subscription;
  }

  /** Closes every open subscription. */
  async closeAll(): Promise<void> {
    await Promise.all([...this.open].map((s) => s.close()));
  }

  private refused(subject: string, err: Error): PermissionError {
    const { tenant, user } = this.source;
    return new PermissionError(
      tenant === undefined
        ? `NATS user ${user ?? "(this connection's user)"} may not subscribe to ${subject} (${err.message}): nats.conf lets the client and observer users subscribe to sessiond.live.>.`
        : `NATS user ${user ?? "(this connection's user)"} may not subscribe to ${subject} (${err.message}): a tenant's user reads its live events when made with the read scope (sessiond setup --tenant ${tenant}), whose block allows ${subjects.tenantLiveFilter(tenant)}.`,
      { cause: err },
    );
  }
}

interface DeliveryRules {
  tenant: string | undefined;
  dedupe: boolean;
  backfill: boolean;
  onInvalid: (invalid: InvalidLiveMessage) => void;
  onError: (err: unknown) => void;
  read: LiveSource['read'];
}

/** One subscription's messages on their way to its handler: decoded, repeats dropped, gaps filled, one at a time. */
class LiveDelivery {
  readonly stats: LiveSubscriptionStats = { delivered: 0, invalid: 0, duplicates: 0, backfilled: 0 };
  /** Per session, the last committed seq delivered (least recently delivered first). */
  private readonly lastSeq = new Map<string, number>();

  constructor(
    private readonly handler: LiveHandler,
    private readonly rules: DeliveryRules,
  ) {}

  /** One message as it arrived: handed over (after the events missing before it), or skipped. */
  async receive(msg: Msg): Promise<void> {
    const event = this.decode(msg);
    if (event === undefined) return;
    if (this.rules.dedupe && event.seq !== undefined) {
      const known = this.lastSeq.get(event.sessionId);
      const last = known ?? 0;
      if (event.seq <= last) {
        this.stats.duplicates++;
        return;
      }
      if (this.rules.backfill && known !== undefined && event.seq > last + 1) await this.fillGap(event.sessionId, last, event.seq);
      this.delivered(event.sessionId, event.seq);
    }
    await this.deliver(event);
  }

  /** The session's events up to `seq` count as delivered. */
  delivered(sessionId: string, seq: number): void {
    this.lastSeq.delete(sessionId);
    this.lastSeq.set(sessionId, seq);
    if (this.lastSeq.size > DEFAULT_DEDUPE_SESSIONS) this.lastSeq.delete(this.lastSeq.keys().next().value!);
  }

  /** Tells `onError`, which may not throw. */
  report(err: unknown): void {
    safely(
      () => this.rules.onError(err),
      () => undefined,
    );
  }

  /** The message's event, or undefined when it is invalid (counted and reported). */
  private decode(msg: Msg): LiveMessage | undefined {
    try {
      return decodeLiveEvent(msg.data, msg.subject, undefined, this.rules.tenant);
    } catch (err) {
      this.stats.invalid++;
      const error = err instanceof SessiondError ? err : new SessiondError(ErrorCode.DecodeFailed, messageOf(err), { cause: err });
      const seq = error.details.seq;
      safely(() => this.rules.onInvalid({ subject: msg.subject, ...(typeof seq === 'number' ? { seq } : {}), error }), this.rules.onError);
      return undefined;
    }
  }

  /** Delivers the committed events of `sessionId` with last < seq < before, read from the stream. */
  private async fillGap(sessionId: string, last: number, before: number): Promise<void> {
    let missing: LiveMessage[];
    try {
      missing = (await this.rules.read(sessionId, last)).filter((e) => e.seq < before) as LiveMessage[];
    } catch (err) {
      this.report(
        new SessiondError(
          ErrorCode.LogClosed,
          `Live events ${last + 1}..${before - 1} of session ${sessionId} were missed and could not be read from the stream (${messageOf(err)}); read them with replay({ sessionId, afterSeq: ${last} }).`,
          { cause: err, details: { sessionId, afterSeq: last, beforeSeq: before } },
        ),
      );
      return;
    }
    for (const e of missing) {
      this.stats.backfilled++;
      await this.deliver(e);
    }
  }

  private async deliver(event: LiveMessage): Promise<void> {
    this.stats.delivered++;
    try {
      await this.handler(event);
    } catch (err) {
      this.report(err);
    }
  }
}

function safely(fn: () => void, onError: (err: unknown) => void): void {
  try {
    fn();
  } catch (err) {
    onError(err);
  }
}
