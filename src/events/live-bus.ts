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
  subscribe(listener: (event: LiveEvent) => void): () => void {
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }
}

export const nullLiveBus: LiveBus = { publish: () => {} };
