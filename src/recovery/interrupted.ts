/**
 * What a live subscriber is told when a turn's owner is gone (`turn.interrupted`), from the log
 * (pure): the step streaming when it was interrupted and how much of each text part the log holds;
 * a subscriber keeps that much of what it showed and discards the rest.
 */
import type { PayloadOf } from '../events/catalog.ts';
import type { SessionEvent } from '../events/envelope.ts';

export type InterruptedTurn = PayloadOf<'turn.interrupted'>;

/**
 * `events`: the session's events from the interrupted execution's claim on (its sealing included).
 * The interrupted step is the execution's last one, unless it ended (`step.ended`): then none was open.
 */
export function interruptedTurn(
  events: readonly SessionEvent[],
  o: { executionId: string; ownerId: string; reason: InterruptedTurn['reason']; continuationInputId: string | null },
): InterruptedTurn {
  let messageId: string | null = null;
  for (const e of events) {
    if (e.type === 'step.started' && e.payload.executionId === o.executionId) messageId = e.payload.messageId;
    if (e.type === 'step.ended' && e.payload.messageId === messageId) messageId = null;
  }
  const lengths = new Map<string, number>();
  if (messageId !== null) {
    for (const e of events) {
      if (e.type === 'text.streamed' && e.payload.messageId === messageId) {
        lengths.set(e.payload.partId, (e.payload.restart ? 0 : (lengths.get(e.payload.partId) ?? 0)) + e.payload.text.length);
      } else if (e.type === 'text.completed' && e.payload.messageId === messageId) lengths.set(e.payload.partId, e.payload.text.length);
    }
  }
  return {
    executionId: o.executionId,
    ownerId: o.ownerId,
    reason: o.reason,
    messageId,
    recorded: [...lengths].map(([partId, length]) => ({ partId, length })),
    continuationInputId: o.continuationInputId,
  };
}
