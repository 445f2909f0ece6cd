/**
 * Live sources for the gateway's event streams (event-stream.ts `LiveSource`): what this process's
 * engine publishes (the embedded whole worker: `engineLive(sessiond)`), or every worker's live
 * subjects on NATS (`natsLive(client)`, as the client user).
 */
import type { LiveEvent, LiveFilter } from '../events/live-bus.ts';
import type { SessiondClient } from '../client/client.ts';
import type { LiveSource } from './event-stream.ts';

/** Anything with the engine's `subscribe` (an `Engine`, a `Sessiond`). */
export function engineLive(engine: { subscribe(filter: LiveFilter, handler: (e: LiveEvent) => void): { close(): void } }): LiveSource {
  return async (sessionId, onEvent) => engine.subscribe({ sessionId }, onEvent);
}

/** The session's live subjects through a client (no dedupe nor backfill: the stream's committed events come from `follow`). */
export function natsLive(client: SessiondClient): LiveSource {
  return async (sessionId, onEvent) => client.subscribe({ sessionId }, (e) => onEvent(e), { dedupe: false, backfill: false });
}
