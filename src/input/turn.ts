/**
 * Which pending inputs a turn takes (every `steer`, one `queue`: a continuation first, else the
 * oldest; scheduled ones from their time) and what the runner sees of them; promotions per append
 * are bounded by `MAX_PROMOTIONS_PER_APPEND`. Rules: docs/architecture.md#inputs.
 */
import { runnableAt, type PendingInput } from '../machines/session-context.ts';
import type { RunInput } from '../runner/types.ts';
import { MAX_PROMOTIONS_PER_APPEND } from './limits.ts';
import { promptText } from '../events/prompt.ts';

export function inputsForTurn(all: readonly PendingInput[], now: number, max = MAX_PROMOTIONS_PER_APPEND): PendingInput[] {
  // only inputs the log admitted (a stored snapshot's claims are not enough: see admittedInLog), and due
  const pending = all.filter((p) => runnableAt(p, now));
  const queued = pending.filter((p) => p.delivery === 'queue');
  const firstQueued = queued.find((p) => p.source === 'recovery') ?? queued[0];
  let steer = firstQueued ? max - 1 : max;
  return pending.filter((p) => p === firstQueued || (p.delivery === 'steer' && steer-- > 0));
}

/** The steering inputs a step boundary takes: the oldest, at most `max`. */
export function steeringInputs(pending: readonly PendingInput[], now: number, max = MAX_PROMOTIONS_PER_APPEND): PendingInput[] {
  return pending.filter((p) => p.delivery === 'steer' && runnableAt(p, now)).slice(0, max);
}

/** What the runner gets for each input: its prompt travels in the session state, no log read. */
export function runInputs(inputs: readonly PendingInput[]): RunInput[] {
  return inputs.map((i) => ({
    inputId: i.inputId,
    prompt: promptText(i.prompt),
    ...(typeof i.prompt === 'string' ? {} : { parts: i.prompt }),
    delivery: i.delivery,
    source: i.source,
    ...(i.continues ? { continues: i.continues } : {}),
  }));
}
