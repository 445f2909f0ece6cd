import type { EventType, PayloadInputOf, PayloadOf } from './catalog.ts';

/**
 * A committed event: what the log stores and every subscriber receives. `seq` is the per-session
 * sequence (1-based, gap-free); `position` is the global commit position in the log that holds it
 * (present once read back from a log). `time` is when the writer decided the event (its clock);
 * `committedAt` is when the log stored it (ms since the epoch; the SQLite log's clock at the commit,
 * JetStream's stored message time), set by the log on reads and on `append` results, absent for
 * events stored before logs recorded it. A write decided under a live lease may land after it
 * expired (an append retried through an outage); the audit reports it from `committedAt`.
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
    committedAt?: number;
  };
}[T];

/** An event about to be appended: the log assigns `seq` (and `position`). */
export type DraftEvent<T extends EventType = EventType> = {
  [K in T]: { id: string; type: K; time: number; payload: PayloadInputOf<K> };
}[T];
