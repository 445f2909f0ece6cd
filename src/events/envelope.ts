import type { EventType, PayloadInputOf, PayloadOf } from './catalog.ts';

/**
 * A committed event: what the log stores and every subscriber receives. `seq` is the per-session
 * sequence (1-based, gap-free); `position` is the global commit position in the log that holds it
 * (present once read back from a log).
 */
export type SessionEvent<T extends EventType = EventType> = {
  [K in T]: {
    id: string;
    type: K;
    version: number;
    sessionId: string;
    seq: number;
    time: number;
    payload: PayloadOf<K>;
    position?: number;
  };
}[T];

/** An event about to be appended: the log assigns `seq` (and `position`). */
export type DraftEvent<T extends EventType = EventType> = {
  [K in T]: { id: string; type: K; time: number; payload: PayloadInputOf<K> };
}[T];
