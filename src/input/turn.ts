/**
 * Which pending inputs a turn takes, and what the runner sees of them. A turn takes every
 * pending `steer` input and one `queue` input: the continuation of an interrupted turn when there is
 * one (it finishes what was started before newer prompts run), else the oldest. The remaining
 * `queue` inputs wait for later turns. Steering inputs admitted during a turn join it at the next
 * step boundary.
 */
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

/** What the runner gets for each input: its prompt travels in the session state, no log read. */
export function runInputs(inputs: readonly PendingInput[]): RunInput[] {
  return inputs.map((i) => ({ inputId: i.inputId, prompt: i.prompt, delivery: i.delivery, source: i.source, ...(i.continues ? { continues: i.continues } : {}) }));
}
