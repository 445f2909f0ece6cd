/**
 * What the parts of the JetStream event log share: the connection and stream, settings, counters,
 * open or closed state, requests retried through outages, stored messages decoded or quarantined.
 * Outages and quarantine: docs/nats.md#the-jetstream-event-log.
 */
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, PermissionError, SessiondError, messageOf } from '../errors.ts';
import type { Clock } from '../clock.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { logClosedError } from '../events/event-log.ts';
import type { QuarantineHandler } from '../events/quarantine.ts';
import { ConnectionWatch, isPermissionError, isTransientNatsError, waitAtMost } from './connection.ts';
import { decodeBatch, isJsTransient } from './stream.ts';
import { readsBackAsIs } from '../events/reads-back.ts';
import { subjects } from './subjects.ts';

/** Messages per pull for reads and subscriptions, and at most per `onBatch` call. */
export const DEFAULT_READ_BATCH = 256;
/** Waits between attempts of a request, and between consumers of a subscription, growing per failure. */
export const BACKOFF_MS = [50, 100, 200, 500, 1000, 2000];

/**
 * The wait before attempt `attempt + 1` of a request: BACKOFF_MS's step, half of it fixed and half
 * drawn at random, so requests refused together (a full stream queue answers hundreds of appends
 * with 429 at once) do not come back together and be refused together again.
 */
export function retryWaitMs(attempt: number, random: () => number = Math.random): number {
  const step = BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]!;
  return Math.round(step / 2 + (random() * step) / 2);
}
/** Quarantined positions remembered to report each once. */
const QUARANTINE_MEMORY = 10_000;

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
  /** Messages this handle published that its reads and subscriptions took from memory instead of decoding. */
  fromOwn: number;
}

/** Messages of its own a handle keeps to hand over undecoded (between this and twice as many). */
const OWN_MESSAGES = 4096;

/** The log's settings, checked and defaulted by `JetStreamEventLog.open`. */
export interface JetStreamLogSettings {
  maxPayloadBytes: number;
  publishTimeoutMs: number;
  publishRetryMs: number;
  tailCacheSize: number;
  clock: Clock;
  onQuarantine: QuarantineHandler;
}

export class JetStreamLogBase {
  readonly name: string;
  readonly stats: JetStreamEventLogStats = {
    published: 0,
    retries: 0,
    duplicateAcks: 0,
    wrongLastSequence: 0,
    retriesRecognised: 0,
    quarantined: 0,
    fromOwn: 0,
  };
  readonly watch: ConnectionWatch;
  /** Positions already quarantined (each is reported once). */
  private readonly quarantinedAt = new Set<number>();
  private isClosed = false;
  /**
   * The batches this handle published, by stream sequence, with the subject and size they were
   * stored with: a read or subscription that meets that message again takes the events from here
   * (with the server's stored time) instead of unpacking and checking them. Only batches whose
   * payloads read back as they are (`readsBackAsIs`); the size and subject guard against a stream
   * that was recreated under the handle (its sequences start again).
   */
  private own = new Map<number, { subject: string; size: number; events: SessionEvent[] }>();

  constructor(
    readonly nc: NatsConnection,
    readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
    readonly stream: string,
    readonly o: JetStreamLogSettings,
  ) {
    this.name = `nats:${stream}`;
    this.watch = new ConnectionWatch(nc);
  }

  /** True once the log is closed (its own connection may still be open). */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Marks the log closed and stops watching the connection. */
  markClosed(): void {
    this.isClosed = true;
    this.watch.stop();
  }

  assertOpen(): void {
    if (this.isClosed) throw logClosedError(this.name);
  }

  /** A read-only JetStream request, retried through outages like a publish. */
  request<T>(fn: () => Promise<T>): Promise<T> {
    return this.retrying(
      fn,
      (err) =>
        new SessiondError(
          ErrorCode.LogClosed,
          `Event log ${this.name} is unreachable: a JetStream request failed for ${this.o.publishRetryMs} ms (${messageOf(err)}). Check that nats-server is running, then retry.`,
          { cause: err },
        ),
    );
  }

  /**
   * Runs `fn` until it succeeds, a non-transient error, or `publishRetryMs` passes. A request sent
   * while disconnected is lost (nats.js drops it), so while down we wait for the reconnect, and a
   * reconnect during a request resends it at once instead of waiting for its timeout.
   */
  async retrying<T>(fn: () => Promise<T>, giveUp: (err: unknown) => Error): Promise<T> {
    const deadline = this.o.clock.now() + this.o.publishRetryMs;
    let lastError: unknown; // made only when needed: an Error's stack costs more than the request on the hot path
    for (let attempt = 0; ; attempt++) {
      this.assertOpen();
      if (!this.watch.connected) {
        const waiter = this.watch.whenReconnected();
        const back = await waitAtMost(waiter.promise, deadline - this.o.clock.now(), this.o.clock);
        waiter.cancel();
        if (!back) throw giveUp(lastError ?? new Error('disconnected from NATS'));
        continue;
      }
      const outcome = await this.attempt(fn);
      if ('value' in outcome) return outcome.value;
      if (this.isClosed || this.nc.isClosed()) throw logClosedError(this.name);
      if ('error' in outcome) {
        if (isPermissionError(outcome.error)) {
          throw new PermissionError(
            `NATS refused a request of event log ${this.name}: ${messageOf(outcome.error)}. The connected user lacks that permission; appending (and lastSeq's fast path) needs a user allowed to publish sessiond.> and $JS.API.> (the worker user in nats.conf).`,
            { cause: outcome.error },
          );
        }
        if (!isTransientNatsError(outcome.error) && !isJsTransient(outcome.error)) throw outcome.error;
        lastError = outcome.error;
      }
      const wait = 'reconnected' in outcome ? 0 : retryWaitMs(attempt);
      if (this.o.clock.now() + wait >= deadline) throw giveUp(lastError ?? new Error('disconnected from NATS'));
      this.stats.retries++;
      if (wait > 0) await waitAtMost(new Promise<never>(() => undefined), wait, this.o.clock);
    }
  }

  /** `fn()`'s outcome, or `reconnected` when the connection comes back first (the request is then lost). */
  private attempt<T>(fn: () => Promise<T>): Promise<{ value: T } | { error: unknown } | { reconnected: true }> {
    return new Promise((resolve) => {
      const drop = this.watch.onNextReconnect(() => resolve({ reconnected: true }));
      fn().then(
        (value) => {
          drop();
          resolve({ value });
        },
        (error: unknown) => {
          drop();
          resolve({ error });
        },
      );
    });
  }

  /** Keeps a batch this handle published (acknowledged at `position`) for `decode`. */
  published(position: number, subject: string, size: number, events: SessionEvent[]): void {
    if (!events.every((e) => readsBackAsIs(e.payload))) return;
    this.own.set(position, { subject, size, events });
    if (this.own.size > OWN_MESSAGES * 2) {
      const keep = [...this.own].slice(-OWN_MESSAGES);
      this.own = new Map(keep);
    }
  }

  /**
   * The events of one stored message, or none when it is not a valid batch: then it is quarantined
   * (reported once per position, counted) and the caller goes on past it.
   */
  decode(data: Uint8Array, position: number, subject: string, stored: Date): SessionEvent[] {
    const mine = this.own.get(position);
    if (mine !== undefined && mine.subject === subject && mine.size === data.byteLength) {
      this.stats.fromOwn++;
      const committedAt = stored.getTime();
      return mine.events.map((e) => ({ ...e, committedAt }));
    }
    try {
      return decodeBatch(data, position, subject, stored.getTime());
    } catch (err) {
      if (!(err instanceof SessiondError)) throw err;
      if (!this.quarantinedAt.has(position)) {
        if (this.quarantinedAt.size >= QUARANTINE_MEMORY) this.quarantinedAt.delete(this.quarantinedAt.values().next().value!);
        this.quarantinedAt.add(position);
        this.stats.quarantined++;
        this.o.onQuarantine({
          position,
          subject,
          sessionId: subjects.sessionOfEventsSubject(subject),
          code: err.code,
          message: err.message,
          size: data.byteLength,
        });
      }
      return [];
    }
  }
}
