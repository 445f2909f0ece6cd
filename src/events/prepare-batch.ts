/**
 * Checks an append's arguments and drafts, the same way for every EventLog implementation:
 * a valid session id, a whole expected sequence, at least one event, each draft valid against its
 * schema and size limit, and no live-only event. Returns the parsed drafts (defaults applied).
 *
 * The size limit costs a pack of every payload. A log that packs the whole batch anyway passes
 * `sizes: 'deferred'` and calls `checkPayloadSizes` only when the batch's bytes are over the
 * limit: a payload can be larger than the limit only if the batch that holds it is.
 */
import { ErrorCode, SessiondError } from '../errors.ts';
import { validateId } from '../ids.ts';
import { isDurable } from './catalog.ts';
import { checkPayloadSize, parseDraftUnsized } from './codec.ts';
import type { DraftEvent } from './envelope.ts';

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
