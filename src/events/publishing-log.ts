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
import type { EventLog } from './event-log.ts';
import type { LiveBus } from './live-bus.ts';
import { ObservedEventLog } from './observed-log.ts';

export class PublishingEventLog extends ObservedEventLog {
  constructor(inner: EventLog, bus: LiveBus) {
    super(inner, {
      committed: (events) => {
        for (const event of events) bus.publish(event);
      },
    });
  }
}

/** `log`, publishing each batch it commits on `bus`. */
export function publishCommits(log: EventLog, bus: LiveBus): EventLog {
  return new PublishingEventLog(log, bus);
}
