/**
 * Checks an append's arguments and drafts the same way for every EventLog: a valid session id, a whole
 * expected sequence, at least one event, no id twice, each draft valid (schema, size limit, not live-only). A log
 * that packs the batch anyway passes `sizes: 'deferred'` and checks payload sizes only when the batch
 * is over the limit (a payload can be over it only if its batch is).
 */
import { ErrorCode, SessiondError } from '../errors.ts';
import { validateId } from '../ids.ts';
import { isDurable } from './catalog.ts';
import { checkPayloadSize, parseDraftUnsized } from './codec.ts';
import type { DraftEvent } from './envelope.ts';
import { duplicateEventError } from './event-log.ts';

export function prepareBatch(sessionId: string, expectedSeq: number, drafts: DraftEvent[], maxPayloadBytes: number | { sizes: 'deferred' }): DraftEvent[] {
  validateId(sessionId, 'session id');
  if (!Number.isInteger(expectedSeq) || expectedSeq < 0) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Invalid expectedSeq ${String(expectedSeq)} for session ${sessionId}: use the session's last sequence (0 for a new session).`,
    );
  }
  if (!Array.isArray(drafts) || drafts.length === 0) {
    throw new SessiondError(ErrorCode.InvalidOption, `Append to session ${sessionId} has no events: pass at least one.`);
  }
  for (let i = 1; i < drafts.length; i++) {
    const id = (drafts[i] as { id?: unknown } | undefined)?.id;
    for (let j = 0; j < i; j++) {
      if (id !== undefined && (drafts[j] as { id?: unknown } | undefined)?.id === id) throw duplicateEventError(sessionId, [String(id)]);
    }
  }
  return drafts.map((d) => {
    const parsed = parseDraftUnsized(d);
    if (!isDurable(parsed.type)) {
      throw new SessiondError(
        ErrorCode.InvalidPayload,
        `Event ${parsed.type} is live-only and is never stored: publish it on the live bus instead of appending it.`,
        { details: { type: parsed.type } },
      );
    }
    if (typeof maxPayloadBytes === 'number') checkPayloadSize(parsed, maxPayloadBytes);
    return parsed;
  });
}

/** The size limit of each payload, for drafts prepared with `sizes: 'deferred'`. */
export function checkPayloadSizes(drafts: DraftEvent[], maxPayloadBytes: number): void {
  for (const d of drafts) checkPayloadSize(d, maxPayloadBytes);
}
