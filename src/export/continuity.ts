/**
 * Watches the events an export (or any reader) goes through and says where a session's sequence
 * is not whole: it starts past seq 1 (earlier events purged or lost), or jumps (events missing in
 * between). Pure: feed it events in log order, then ask for the findings.
 */
import type { SessionEvent } from '../events/envelope.ts';

export interface ContinuityProblem {
  sessionId: string;
  /** The first seq missing and the seq seen instead. */
  expected: number;
  found: number;
  message: string;
}

export class SeqContinuity {
  private readonly next = new Map<string, number>();
  private readonly found: ContinuityProblem[] = [];

  observe(events: readonly SessionEvent[]): void {
    for (const e of events) {
      const expected = this.next.get(e.sessionId) ?? 1;
      if (e.seq !== expected) {
        const what =
          expected === 1
            ? `starts at seq ${e.seq}, not 1: events 1-${e.seq - 1} are not in the log (purged or lost)`
            : `jumps from seq ${expected - 1} to ${e.seq}: events ${expected}-${e.seq - 1} are not in the log`;
        this.found.push({ sessionId: e.sessionId, expected, found: e.seq, message: `session ${e.sessionId} ${what}` });
      }
      this.next.set(e.sessionId, e.seq + 1);
    }
  }

  /** The last seq seen of a session (0 when none). */
  last(sessionId: string): number {
    return (this.next.get(sessionId) ?? 1) - 1;
  }

  problems(): readonly ContinuityProblem[] {
    return this.found;
  }
}
