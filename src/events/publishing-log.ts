/**
 * `publishCommits`: an EventLog that puts every batch it commits on a LiveBus once, right after the
 * acknowledgement, so each committed event goes out once, in the writer's order, however many
 * workers run. Gaps are best effort, filled by subscribers: docs/nats.md#live-events.
 *
 *   const log = publishCommits(await JetStreamEventLog.open(...), new NatsLiveBus(nc));
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
