/**
 * Which pending inputs a turn takes, and loading their prompts from the log. A turn takes every
 * pending `steer` input and one `queue` input: the continuation of an interrupted turn when there is
 * one (it finishes what was started before newer prompts run), else the oldest. The remaining
 * `queue` inputs wait for later turns. Steering inputs admitted during a turn join it at the next
 * step boundary.
 */
import type { EventLog } from '../events/event-log.ts';
import type { PendingInput } from '../machines/session-context.ts';
import type { RunInput } from '../runner/types.ts';

export function inputsForTurn(pending: readonly PendingInput[]): PendingInput[] {
  const queued = pending.filter((p) => p.delivery === 'queue');
  const firstQueued = queued.find((p) => p.source === 'recovery') ?? queued[0];
  return pending.filter((p) => p.delivery === 'steer' || p === firstQueued);
}

export function steeringInputs(pending: readonly PendingInput[]): PendingInput[] {
  return pending.filter((p) => p.delivery === 'steer');
}

export async function loadPrompts(log: EventLog, sessionId: string, inputs: readonly PendingInput[]): Promise<RunInput[]> {
  const out: RunInput[] = [];
  for (const input of inputs) {
    const [event] = await log.readSession(sessionId, { afterSeq: input.seq - 1, limit: 1 });
    if (!event || event.type !== 'input.admitted' || event.payload.inputId !== input.inputId) {
      throw new Error(`Input ${input.inputId} of session ${sessionId} is not at sequence ${input.seq} in the log; the log and the session state disagree.`);
    }
    out.push({ inputId: input.inputId, prompt: event.payload.prompt, delivery: event.payload.delivery });
  }
  return out;
}
