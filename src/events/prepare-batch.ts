/**
 * Checks an append's arguments and drafts, the same way for every EventLog implementation:
 * a valid session id, a whole expected sequence, at least one event, each draft valid against its
 * schema and size limit, and no live-only event. Returns the parsed drafts (defaults applied).
 */
import { ErrorCode, SessiondError } from '../errors.ts';
import { validateId } from '../ids.ts';
import { isDurable } from './catalog.ts';
import { parseDraft } from './codec.ts';
import type { DraftEvent } from './envelope.ts';

export function prepareBatch(sessionId: string, expectedSeq: number, drafts: DraftEvent[], maxPayloadBytes: number): DraftEvent[] {
  validateId(sessionId, 'session id');
  if (!Number.isInteger(expectedSeq) || expectedSeq < 0) {
    throw new SessiondError(ErrorCode.InvalidOption, `Invalid expectedSeq ${String(expectedSeq)} for session ${sessionId}: use the session's last sequence (0 for a new session).`);
  }
  if (!Array.isArray(drafts) || drafts.length === 0) {
    throw new SessiondError(ErrorCode.InvalidOption, `Append to session ${sessionId} has no events: pass at least one.`);
  }
  return drafts.map((d) => {
    const parsed = parseDraft(d, maxPayloadBytes);
    if (!isDurable(parsed.type)) {
      throw new SessiondError(ErrorCode.InvalidPayload, `Event ${parsed.type} is live-only and is never stored: publish it on the live bus instead of appending it.`, { details: { type: parsed.type } });
    }
    return parsed;
  });
}

