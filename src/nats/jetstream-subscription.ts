/**
 * Subscriptions to the JetStream event log: committed events in commit order, from a position, as
 * any process commits them, through an ordered consumer started anew after each outage.
 * How: docs/nats.md#the-jetstream-event-log.
 */
import type { Consumer, ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import { ErrorCode, SessiondError, messageOf } from '../errors.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { logClosedError, type SubscribeOptions, type Subscription } from '../events/event-log.ts';
import { waitAtMost } from './connection.ts';
import { BACKOFF_MS, DEFAULT_READ_BATCH, type JetStreamLogBase } from './jetstream-log-base.ts';
import { ReadyRuns } from './ready-runs.ts';
import { endUnread } from './consumer-messages.ts';

/** Consumer notifications after which a subscription starts a new consumer at once. */
const LOST_CONSUMER = new Set(['consumer_deleted', 'consumer_not_found', 'heartbeats_missed', 'stream_not_found']);

/** Wraps what a subscriber's handler threw, to tell it apart from a failure of the read itself (rethrown as its cause). */
class HandlerError extends SessiondError {
  constructor(cause: unknown) {
    super(ErrorCode.Internal, `a subscriber's handler failed: ${messageOf(cause)}`, { cause });
    this.name = 'HandlerError';
  }
}

export class JetStreamSubscriptions {
  /** The subscriptions not yet closed (the log closes them when it closes). */
  private readonly open = new Set<Subscription>();

  constructor(private readonly base: JetStreamLogBase) {}

  subscribe(options: SubscribeOptions): Subscription {
    const b = this.base;
    b.assertOpen();
    let position = options.after ?? 0;
    let stopped = false;
    let messages: ConsumerMessages | undefined;
    let stop: () => void = () => undefined;
    const stopping = new Promise<void>((resolve) => {
      stop = resolve;
    });
    const onError = options.onError ?? ((err: unknown) => process.stderr.write(`sessiond: subscriber on ${b.name} stopped: ${String(err)}\n`));
    const run = async () => {
      for (let failures = 0; !stopped; failures++) {
        let consumer: Consumer | undefined;
        let runs: ReadyRuns<JsMsg> | undefined;
        messages = undefined;
        try {
          consumer = await b.js.consumers.get(b.stream, { opt_start_seq: position + 1 });
          messages = await consumer.consume({ max_messages: DEFAULT_READ_BATCH });
          if (stopped) break;
          // On a reconnect, start a new consumer after `position` with our own short backoff: nats.js's
          // ordered consumer, when its consumer info fails, waits the pull's 30 s `expires` and the
          // subscription stalled that long (test/nats/multinode.test.ts).
          const current = messages;
          void b.watch
            .nextReconnect()
            .then(() => current.close())
            .catch(() => undefined);
          // Likewise when the consumer is gone (deleted by someone else, or the server lost it): the
          // ordered consumer would notice only after missed heartbeats (tens of seconds), so end it
          // at once and start a new one after `position` (test/nats/attacks.test.ts).
          void (async () => {
            for await (const status of current.status()) {
              if (LOST_CONSUMER.has(status.type)) {
                await current.close();
                break;
              }
            }
          })().catch(() => undefined);
          // what has arrived is handed over at once: a subscriber that catches up folds many
          // messages per call (one transaction for the projector) instead of one per message
          runs = new ReadyRuns(messages[Symbol.asyncIterator]());
          for (let run = await runs.next(DEFAULT_READ_BATCH); run.length > 0 && !stopped; run = await runs.next(DEFAULT_READ_BATCH)) {
            const events: SessionEvent[] = [];
            let last = position;
            for (const m of run) {
              if (m.seq <= last) continue; // already delivered before a reset
              for (const e of b.decode(m.data, m.seq, m.subject, m.time)) events.push(e);
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
          if (runs) {
            runs.end(); // else messages the loop did not take keep the close below waiting
            await messages?.close();
          } else if (messages) {
            await endUnread(messages); // closed before the loop took any (stopped while the consumer was made)
          }
          consumer?.delete().catch(() => undefined);
        }
        if (stopped) break;
        if (b.nc.isClosed()) throw logClosedError(b.name);
        // the consumer ended or could not be created (server gone too long): start again after `position`
        await waitAtMost(Promise.race([stopping, b.watch.nextReconnect()]), BACKOFF_MS[Math.min(failures, BACKOFF_MS.length - 1)]!, b.o.clock);
      }
    };
    const done = run().catch((err) => {
      if (!stopped) {
        stopped = true;
        onError(err);
      }
    });
    const sub: Subscription = {
      get position() {
        return position;
      },
      close: async () => {
        stopped = true;
        stop();
        await messages?.close();
        await done;
        this.open.delete(sub);
      },
    };
    this.open.add(sub);
    return sub;
  }

  /** Closes every subscription still open. */
  async closeAll(): Promise<void> {
    await Promise.all([...this.open].map((s) => s.close()));
  }
}
