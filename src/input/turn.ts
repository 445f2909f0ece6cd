/**
 * Which pending inputs a turn takes, and what the runner sees of them. A turn takes every
 * pending `steer` input and one `queue` input: the continuation of an interrupted turn when there is
 * one (it finishes what was started before newer prompts run), else the oldest. The remaining
 * `queue` inputs wait for later turns. Steering inputs admitted during a turn join it at the next
 * step boundary. A scheduled prompt (`notBefore`) is taken only from its time on.
 *
 * What one append promotes is bounded (`MAX_PROMOTIONS_PER_APPEND`): a turn takes the queued input
 * and the oldest steering inputs up to the bound; the other steering inputs join at the next step
 * boundary (also bounded) or the next turn. However many inputs wait, no promotion outgrows a
 * message.
 */
import { runnableAt, type PendingInput } from '../machines/session-context.ts';
import type { RunInput } from '../runner/types.ts';
import { MAX_PROMOTIONS_PER_APPEND } from './limits.ts';
import { promptText } from './prompt.ts';

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
