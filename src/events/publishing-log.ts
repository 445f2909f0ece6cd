/**
 * An EventLog that puts every batch it commits on a LiveBus, once, right after the log acknowledged
 * it: the writer publishes its own commits (hand-back events on shutdown included), so with any
 * number of workers each committed event goes out once, in the writer's order.
 *
 *   const log = publishCommits(await JetStreamEventLog.open(...), new NatsLiveBus(nc));
 *
 * Live delivery stays best effort (core NATS): a writer that dies between the acknowledgement and the
 * publish, or a slow subscriber, leaves a gap that a subscriber sees as a jump in a session's `seq`
 * and fills from the durable log (`SessiondClient.subscribe` does it; docs/protocol.md says how).
 * A retried append that the log recognises as already committed is published again (same ids and
 * seqs: subscribers drop repeats by seq).
 */
import type { EventLog, ReadPagesOptions, SubscribeOptions, Subscription } from './event-log.ts';
import type { DraftEvent, SessionEvent } from './envelope.ts';
import type { LiveBus } from './live-bus.ts';

export class PublishingEventLog implements EventLog {
  readonly name: string;

  constructor(readonly inner: EventLog, private readonly bus: LiveBus) {
    this.name = inner.name;
  }

  async append(sessionId: string, expectedSeq: number, drafts: DraftEvent[]): Promise<SessionEvent[]> {
    const committed = await this.inner.append(sessionId, expectedSeq, drafts);
    for (const event of committed) this.bus.publish(event);
    return committed;
  }

  readSession(sessionId: string, options?: { afterSeq?: number; limit?: number }): Promise<SessionEvent[]> {
    return this.inner.readSession(sessionId, options);
  }

  lastSeq(sessionId: string): Promise<number> {
    return this.inner.lastSeq(sessionId);
  }

  readAll(options?: { after?: number; limit?: number }): Promise<SessionEvent[]> {
    return this.inner.readAll(options);
  }

  readPages(options?: ReadPagesOptions): AsyncIterable<SessionEvent[]> {
    return this.inner.readPages(options);
  }

  head(): Promise<number> {
    return this.inner.head();
  }

  subscribe(options: SubscribeOptions): Subscription {
    return this.inner.subscribe(options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** `log`, publishing each batch it commits on `bus`. */
export function publishCommits(log: EventLog, bus: LiveBus): EventLog {
  return new PublishingEventLog(log, bus);
}
