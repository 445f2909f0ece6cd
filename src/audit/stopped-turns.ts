/**
 * Turns a limit stopped: settled failed at their step limit (`step_limit`) or their deadline
 * (`turn_timeout`). Not violations: `sessiond check` lists them so a log's reader sees where a
 * model loop did not end on its own.
 */
import type { SessionEvent } from '../events/envelope.ts';
import { ErrorCode } from '../errors.ts';

export interface StoppedTurn {
  sessionId: string;
  executionId: string;
  seq: number;
  type: string;
  message: string;
}

const LIMITS: readonly string[] = [ErrorCode.StepLimit, ErrorCode.TurnTimeout];

export function stoppedTurns(events: readonly SessionEvent[]): StoppedTurn[] {
  const out: StoppedTurn[] = [];
  for (const e of events) {
    if (e.type !== 'execution.settled' || e.payload.outcome !== 'failed' || !e.payload.error) continue;
    if (!LIMITS.includes(e.payload.error.type)) continue;
    out.push({ sessionId: e.sessionId, executionId: e.payload.executionId, seq: e.seq, type: e.payload.error.type, message: e.payload.error.message });
  }
  return out;
}
