/**
 * Where live-only events (text deltas) and, optionally, committed events go as they happen. The
 * in-process bus is an EventEmitter; the NATS bus publishes on `sessiond.live.<session>.<type>`.
 */
import { EventEmitter } from 'node:events';
import type { EventType, PayloadOf } from './catalog.ts';

export interface LiveEvent<T extends EventType = EventType> {
  id: string;
  type: T;
  sessionId: string;
  time: number;
  payload: PayloadOf<T>;
  /** Present for committed events. */
  seq?: number;
}

export interface LiveBus {
  publish(event: LiveEvent): void;
}

export class LocalLiveBus implements LiveBus {
  private readonly emitter = new EventEmitter();
  constructor() {
    this.emitter.setMaxListeners(0);
  }
  publish(event: LiveEvent): void {
    this.emitter.emit('event', event);
  }
  /**
   * Calls `listener` with each event published from now on, synchronously inside `publish` (keep it
   * short: queue the work). A listener that throws is reported to `onError` (default: one line on
   * stderr) and stays subscribed; the publisher (a runner, a commit) never sees it.
   */
  subscribe(listener: (event: LiveEvent) => void, onError?: (err: unknown) => void): () => void {
    const guarded = (event: LiveEvent) => {
      try {
        listener(event);
      } catch (err) {
        try {
          (onError ?? ((e: unknown) => process.stderr.write(`sessiond: a live subscriber failed: ${String((e as Error)?.message ?? e)}\n`)))(err);
        } catch {
          // an onError that throws must not reach the publisher
        }
      }
    };
    this.emitter.on('event', guarded);
    return () => this.emitter.off('event', guarded);
  }
}

export const nullLiveBus: LiveBus = { publish: () => {} };

/** Which live events a subscriber wants. */
export interface LiveFilter {
  /** One session (default: every session). */
  sessionId?: string;
  /** An event type (`step.started`), a family (`tool.*`), or every type (default). */
  type?: string;
}

/** Whether `event` passes `filter` (a family `tool.*` takes every `tool.` type). */
export function matchesLive(filter: LiveFilter, event: LiveEvent): boolean {
  if (filter.sessionId !== undefined && event.sessionId !== filter.sessionId) return false;
  if (filter.type === undefined) return true;
  return filter.type.endsWith('.*') ? event.type.startsWith(filter.type.slice(0, -1)) : event.type === filter.type;
}

/** Publishes every event on each bus, in order. */
export function fanOut(...buses: LiveBus[]): LiveBus {
  return {
    publish: (event) => {
      for (const b of buses) b.publish(event);
    },
  };
}
