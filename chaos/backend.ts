/**
 * What the fault suite (chaos/run.ts) drives: its worker processes and a backend (SQLite, one
 * nats-server, or the 3-server cluster of chaos/cluster.ts), and the raw read of a JetStream stream
 * its checker judges.
 */
import type { ChildProcess } from 'node:child_process';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { fromStreamMessage, type RawEvent } from './checker.ts';
import { STREAM_NAME } from '../src/nats/subjects.ts';

export interface Worker {
  name: string;
  proc: ChildProcess | undefined;
  state: 'running' | 'stopped' | 'dead';
  skewed: boolean;
  start(): void;
}

export interface Backend {
  name: 'sqlite' | 'nats';
  /** How the run names it in its lines (`nats`, `nats cluster of 3`). */
  label?: string;
  workerArgs(i: number): string[];
  admit(session: string, inputId: string, prompt: string, delivery: 'queue' | 'steer'): Promise<void>;
  cancel(session: string): Promise<void>;
  /** The call ids a session's waiting turn asks a person about (open approvals). */
  openApprovals(session: string): Promise<string[]>;
  /** A person's decision on one of them. */
  decide(session: string, callId: string, approve: boolean): Promise<void>;
  /** NATS only: raw bytes as a command request (what a bad client sends), resolving with the reply's bytes. */
  rawRequest?(subject: string, body: Uint8Array): Promise<Uint8Array>;
  readLog(): Promise<{ events: RawEvent[]; unreadable: number }>;
  /**
   * Backend-only faults (server restarts, partitions): the kind injected and what exactly, or
   * undefined. `say` prints a line (a fault that plays out over time reports how it went).
   */
  fault?(random: () => number, workers: Worker[], say: (line: string) => void): Promise<{ kind: string; detail: string } | undefined>;
  heal?(): Promise<void>;
  close(): Promise<void>;
}

/** Every message of the events stream, decoded by the checker's own decoder (an ordered consumer, as the admin user). */
export async function readStream(admin: NatsConnection): Promise<{ events: RawEvent[]; unreadable: number }> {
  const events: RawEvent[] = [];
  let unreadable = 0;
  const consumer = await jetstream(admin).consumers.get(STREAM_NAME, {});
  if ((await consumer.info(true)).num_pending === 0) return { events, unreadable };
  const messages = await consumer.consume({ max_messages: 256 });
  for await (const m of messages) {
    try {
      events.push(...fromStreamMessage(m.data));
    } catch {
      unreadable++;
    }
    if (m.info.pending === 0) break;
  }
  await messages.close();
  return { events, unreadable };
}
