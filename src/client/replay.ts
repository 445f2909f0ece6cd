/**
 * The client's reads of history: committed events from the durable stream (opened read-only on
 * first use), or for a tenant, whose user has no JetStream, page by page from the workers.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { ErrorCode, PermissionError, isSessiondError } from '../errors.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { validateId } from '../ids.ts';
import { EVENTS_PAGE } from '../nats/command-protocol.ts';
import { JetStreamEventLog } from '../nats/jetstream-event-log.ts';
import { checkEventsOptions } from '../sessions/events-page.ts';
import type { EventsOptions } from '../sessions/sessions.ts';
import { unknownSession } from '../sessions/unknown-session.ts';
import type { CommandSender } from './commands.ts';

export interface ReplayOptions {
  /** One session's events (default: every session, in commit order). */
  sessionId?: string;
  /** Only events with a log position above this. */
  after?: number;
  /** Only events with a session seq above this (with `sessionId`). */
  afterSeq?: number;
  /** At most this many events (whole appends when replaying every session). */
  limit?: number;
}

export class HistoryReader {
  private log: Promise<JetStreamEventLog> | undefined;

  /** `commands` pages a tenant's reads (the `events` command). */
  constructor(
    private readonly nc: NatsConnection,
    private readonly stream: string,
    private readonly tenant: string | undefined,
    private readonly commands: CommandSender,
  ) {}

  /** See `SessiondClient.replay`. */
  async replay(options: ReplayOptions = {}): Promise<SessionEvent[]> {
    const after = options.after ?? 0;
    const limit = options.limit ?? Infinity;
    if (this.tenant !== undefined) {
      if (options.sessionId === undefined) this.assertNotTenant('replay the whole log (name a session: replay({ sessionId }))');
      const events = await this.events(options.sessionId!, { afterSeq: options.afterSeq ?? 0 }).catch((err: unknown) => {
        if (isSessiondError(err, ErrorCode.NotFound)) return [];
        throw err;
      });
      return events.filter((e) => (e.position ?? 0) > after).slice(0, limit);
    }
    const log = await this.eventLog();
    if (options.sessionId === undefined) {
      return log.readAll({ after, ...(options.limit !== undefined ? { limit: options.limit } : {}) });
    }
    const events = await log.readSession(options.sessionId, { afterSeq: options.afterSeq ?? 0 });
    return events.filter((e) => (e.position ?? 0) > after).slice(0, limit);
  }

  /** See `SessiondClient.events`. */
  async events(sessionId: string, options: EventsOptions = {}): Promise<SessionEvent[]> {
    const { afterSeq, limit } = checkEventsOptions(options);
    validateId(sessionId, 'session id');
    if (this.tenant === undefined) {
      const log = await this.eventLog();
      const events = await log.readSession(sessionId, { afterSeq, ...(limit === undefined ? {} : { limit }) });
      if (events.length === 0 && (await log.readSession(sessionId, { limit: 1 })).length === 0) throw unknownSession(sessionId, 'read');
      return events;
    }
    const events: SessionEvent[] = [];
    let last = afterSeq;
    for (;;) {
      const want = Math.min(EVENTS_PAGE, (limit ?? Infinity) - events.length);
      const page = await this.commands.request('events', { sessionId, afterSeq: last, limit: want });
      events.push(...page.events);
      if (!page.more || page.events.length === 0 || events.length >= (limit ?? Infinity)) return events;
      last = page.events[page.events.length - 1]!.seq;
    }
  }

  /** The stream as a read-only event log (opened on first use; never creates the stream). */
  eventLog(): Promise<JetStreamEventLog> {
    this.log ??= JetStreamEventLog.open({ connection: this.nc, ensureStream: false, stream: this.stream });
    this.log.catch(() => {
      this.log = undefined;
    });
    return this.log;
  }

  /** Closes the event log, if one was opened. */
  async close(): Promise<void> {
    const log = await this.log?.catch(() => undefined);
    await log?.close();
  }

  private assertNotTenant(what: string): void {
    if (this.tenant !== undefined)
      throw new PermissionError(
        `A client acting as tenant ${this.tenant} cannot ${what}: a tenant's NATS user has no JetStream (the stream holds every tenant's sessions). It reads its own sessions with events, replay({ sessionId }), follow and subscribe (docs/nats.md, "Tenants").`,
      );
  }
}
