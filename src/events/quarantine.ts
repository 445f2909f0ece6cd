/**
 * A stored message that is not a valid sessiond event batch (bad msgpack, a frame that fails its
 * schema, a frame of another session...). Readers quarantine it: they skip it, say so once, count
 * it, and carry on, so one bad message never stops projections or live delivery for every session.
 * `sessiond check` reports every quarantined message; a worker records the ones it meets in its
 * database (`quarantined_message`).
 */
export interface QuarantinedMessage {
  /** The message's log position (its stream sequence on JetStream). */
  position: number;
  /** Where it was stored, e.g. `sessiond.events.ses_1`. */
  subject: string;
  /** The session its subject names. */
  sessionId: string;
  /** The decode error's code (decode_failed, invalid_payload, unknown_event_type...). */
  code: string;
  /** What is wrong with it, in words. */
  message: string;
  /** Its size in bytes. */
  size: number;
}

export type QuarantineHandler = (message: QuarantinedMessage) => void;

/** One line for a log, e.g. `quarantined message 15 on sessiond.events.ses_1 (38 bytes): ...`. */
export function describeQuarantine(q: QuarantinedMessage): string {
  return `quarantined message ${q.position} on ${q.subject} (${q.size} bytes), skipped: ${q.message}`;
}
