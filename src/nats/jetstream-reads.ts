/**
 * Reading the JetStream event log: a session, the whole stream, pages, the head, each with one
 * ordered consumer that pulls only as the read consumes. Details: docs/nats.md#the-jetstream-event-log.
 */
import { DeliverPolicy, type ConsumerMessages } from '@nats-io/jetstream';
import { ErrorCode, SessiondError } from '../errors.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { logClosedError, pageSizeOption, type ReadPagesOptions } from '../events/event-log.ts';
import type { TimerHandle } from '../clock.ts';
import { isPermissionError } from './connection.ts';
import { DEFAULT_READ_BATCH, type JetStreamLogBase } from './jetstream-log-base.ts';
import { subjects } from './subjects.ts';

/** One stored message, decoded: no events when it was quarantined. */
interface StoredMessage {
  seq: number;
  events: SessionEvent[];
}

/** A session's last message read from the server: its last event seq and its events (jetstream-append.ts). */
export type TailLoader = (sessionId: string) => Promise<{ lastSeq: number; events: SessionEvent[] }>;

export class JetStreamReads {
  /** `tail` reads a session's last message (and caches it for the appends). */
  constructor(
    private readonly base: JetStreamLogBase,
    private readonly tail: TailLoader,
  ) {}

  async readSession(sessionId: string, options: { afterSeq?: number; limit?: number } = {}): Promise<SessionEvent[]> {
    const subject = subjects.events(sessionId);
    const afterSeq = options.afterSeq ?? 0;
    const limit = options.limit ?? Infinity;
    const out: SessionEvent[] = [];
    if (limit <= 0) return out;
    if (afterSeq > 0) {
      // Catching up: the session's last message (one request) often holds everything after
      // `afterSeq`; otherwise every catch-up re-read the whole history (found by the benchmarks).
      const tail = await this.tail(sessionId).catch((err: unknown) => {
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
      return (await this.tail(sessionId)).lastSeq;
    } catch (err) {
      if (!isPermissionError((err as Error).cause)) throw err;
      // users that may only use consumers (client, observer in nats.conf): read the last message with one
      let last = 0;
      const subject = subjects.events(sessionId);
      await this.scan('last', subject, (events) => {
        last = events[events.length - 1]?.seq ?? -1;
        return true;
      });
      if (last === -1) last = (await this.lastValidBatch(subject)).at(-1)?.seq ?? 0; // the last message is quarantined
      return last;
    }
  }

  /** The session's last valid batch, found by reading its whole subject (after a quarantined tail). */
  async lastValidBatch(subject: string): Promise<SessionEvent[]> {
    let last: SessionEvent[] = [];
    await this.scan(1, subject, (events) => {
      if (events.length > 0) last = events;
      return true;
    });
    return last;
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
    const b = this.base;
    const info = await b.request(() => b.jsm.streams.info(b.stream));
    return info.state.last_seq;
  }

  readPages(options: ReadPagesOptions = {}): AsyncIterable<SessionEvent[]> {
    return this.pages(options.after ?? 0, pageSizeOption(options.pageSize));
  }

  /** Visits the messages `stored()` reads, until `visit` says stop. */
  private async scan(start: number | 'last', filter: string | undefined, visit: (events: SessionEvent[]) => boolean): Promise<void> {
    for await (const message of this.stored(start, filter)) if (!visit(message.events)) return;
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
   * through one ordered consumer until none is pending. Leaving the loop early ends the consumer.
   * A consumer silent for `publishTimeoutMs` while the read waits is replaced from the next message,
   * for `publishRetryMs` without progress, then `log_closed` (why: docs/nats.md, "Stalled reads").
   */
  private async *stored(start: number | 'last', filter: string | undefined): AsyncGenerator<StoredMessage> {
    const b = this.base;
    const clock = b.o.clock;
    b.assertOpen();
    let progressAt = clock.now();
    for (let from = start; ; ) {
      const consumer = await b.request(() =>
        b.js.consumers.get(b.stream, {
          ...(from === 'last' ? { deliver_policy: DeliverPolicy.Last } : { opt_start_seq: Math.max(1, from) }),
          ...(filter ? { filter_subjects: filter } : {}),
        }),
      );
      let messages: ConsumerMessages | undefined;
      let ended: 'reconnected' | 'stalled' | undefined;
      let dropWaiter = () => {};
      const end = (why: 'reconnected' | 'stalled') => {
        ended ??= why;
        messages?.close().catch(() => undefined);
      };
      // one watchdog per consumer, not a timer per message: `waitingSince` is when the read last
      // asked for a message (undefined while its caller holds one)
      let waitingSince: number | undefined;
      let watchdog: TimerHandle | undefined;
      const watch = () => {
        if (waitingSince !== undefined && clock.now() - waitingSince >= b.o.publishTimeoutMs) {
          end('stalled');
          return;
        }
        watchdog = clock.setTimeout(watch, Math.max(1, b.o.publishTimeoutMs / 4));
      };
      try {
        if ((await consumer.info(true)).num_pending === 0) return;
        messages = await consumer.consume({ max_messages: DEFAULT_READ_BATCH });
        dropWaiter = b.watch.onNextReconnect(() => end('reconnected'));
        waitingSince = clock.now();
        watch();
        for await (const m of messages) {
          from = m.seq + 1;
          progressAt = clock.now();
          waitingSince = undefined;
          yield { seq: m.seq, events: b.decode(m.data, m.seq, m.subject, m.time) };
          if (m.info.pending === 0) return;
          waitingSince = clock.now();
        }
        if (b.closed || b.nc.isClosed()) throw logClosedError(b.name);
        if (ended === 'reconnected') continue;
        if (ended === 'stalled' && clock.now() - progressAt < b.o.publishRetryMs) {
          b.stats.retries++;
          continue;
        }
        throw new SessiondError(
          ErrorCode.LogClosed,
          ended === 'stalled'
            ? `Reading ${b.name} stalled: no message arrived for ${b.o.publishRetryMs} ms though the stream has more (consumers were started again from stream sequence ${from}). Check that nats-server and its cluster are reachable, then retry the read.`
            : `Reading ${b.name} stopped before the end of the stream. Retry the read.`,
        );
      } finally {
        clock.clearTimeout(watchdog);
        dropWaiter();
        await messages?.close();
        consumer.delete().catch(() => undefined);
      }
    }
  }
}
