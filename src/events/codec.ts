/**
 * msgpack codec for events on the wire and in the log: plain maps only (no msgpackr records or shared
 * structures), so every frame decodes on its own, years later, in any language. Decoding throws only
 * a `SessiondError` with a codec code, its message saying what was wrong.
 */
import { Packr } from 'msgpackr';
import { z } from 'zod';
import { ErrorCode, SessiondError, isSessiondError, messageOf } from '../errors.ts';
import { validateId } from '../ids.ts';
import { catalog, isEventType, type EventType, type PayloadOf } from './catalog.ts';
import type { DraftEvent, SessionEvent } from './envelope.ts';

/** Largest encoded payload accepted, in bytes. NATS' default max_payload is 1 MiB for the whole message. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 512 * 1024;

// int64AsType 'auto': msgpack int64/uint64 read back as plain numbers while they are safe integers
const packr = new Packr({ useRecords: false, moreTypes: false, variableMapSize: true, int64AsType: 'auto' as 'number' }); // 'auto' is missing from msgpackr's types

/**
 * msgpack bytes of `value`. Integers stay integers on the wire: msgpackr writes a JS number outside
 * 32 bits (every `time`, `expiresAt`) as a float64, which Go's and Python's msgpack read as a float,
 * so such integers are written as int64 (uint64 above its range). Old logs with float64 times still read.
 */
export function pack(value: unknown): Uint8Array {
  return packr.pack(wideIntegers(value));
}

export function unpack(bytes: Uint8Array): unknown {
  return packr.unpack(bytes);
}

const INT32_MIN = -0x80000000;
const UINT32_LIMIT = 0x100000000;

/**
 * `value` with every integer outside the 32-bit range as a BigInt (msgpackr packs those as int64).
 * Keys whose value is undefined are left out. Copy on write: a value with neither (most payloads)
 * is returned as it is, unallocated.
 */
function wideIntegers(value: unknown): unknown {
  if (typeof value === 'number') {
    return Number.isSafeInteger(value) && (value >= UINT32_LIMIT || value < INT32_MIN) ? BigInt(value) : value;
  }
  if (value === null || typeof value !== 'object' || ArrayBuffer.isView(value) || value instanceof Date) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    value.forEach((v, i) => {
      const w = wideIntegers(v);
      if (w !== v) (out ??= value.slice())[i] = w;
    });
    return out ?? value;
  }
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    const v = (value as Record<string, unknown>)[key];
    if (v === undefined) {
      delete (out ??= { ...value })[key];
      continue;
    } // left out, never nil
    const w = wideIntegers(v);
    if (w !== v) (out ??= { ...value })[key] = w;
  }
  return out ?? value;
}

function fail(code: SessiondError['code'], message: string, details: Record<string, unknown> = {}, cause?: unknown): never {
  throw new SessiondError(code, message, { details, cause });
}

/**
 * Payload objects this codec produced by validating them, with the type they were valid for: a
 * payload read from a log and then folded by the projector is checked once, not twice (payloads
 * are never changed in place once made).
 */
const validated = new WeakMap<object, EventType>();

/** The catalog a decode reads types, versions, schemas and upcasters from (tests pass their own). */
export type EventCatalog = Record<
  string,
  { type: string; version: number; schema: z.ZodType; durable: boolean; upcasters?: Readonly<Record<number, (payload: unknown) => unknown>> }
>;

/**
 * Validates a payload against its type's schema and returns the parsed payload (defaults applied).
 * A payload of an older version is first brought up to the current one by the type's upcasters
 * (`upcasters[v]` turns a version-v payload into a version-v+1 one), then validated; a newer version,
 * or an older one without an upcaster, is `unsupported_event_version`.
 */
export function parsePayload<T extends EventType>(type: T, version: number, payload: unknown, events: EventCatalog = catalog as EventCatalog): PayloadOf<T> {
  const entry = events[type]!;
  if (version === entry.version && typeof payload === 'object' && payload !== null && validated.get(payload) === type) return payload as PayloadOf<T>;
  let current = payload;
  for (let v = version; v < entry.version; v++) {
    const up = entry.upcasters?.[v];
    if (!up) {
      fail(
        ErrorCode.UnsupportedEventVersion,
        `Event ${type} has version ${version}, and this build has no upcaster from version ${v} (it reads version ${entry.version}). Replay with the version that wrote the log.`,
        { type, version, expected: entry.version },
      );
    }
    current = up(current);
  }
  if (version > entry.version) {
    fail(
      ErrorCode.UnsupportedEventVersion,
      `Event ${type} has version ${version}, but this build reads version ${entry.version}. Upgrade sessiond (or replay with the version that wrote the log).`,
      { type, version, expected: entry.version },
    );
  }
  const result = entry.schema.safeParse(current);
  if (!result.success) {
    fail(ErrorCode.InvalidPayload, `Event ${type} has an invalid payload: ${z.prettifyError(result.error).replaceAll('\n', '; ')}`, {
      type,
      issues: result.error.issues,
    });
  }
  if (typeof result.data === 'object' && result.data !== null) validated.set(result.data, type);
  return result.data as PayloadOf<T>;
}

/** Checks a draft (type known, payload valid, id valid, payload within the size limit) and returns it with the parsed payload. */
export function parseDraft(input: DraftEvent, maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES): DraftEvent {
  const draft = parseDraftUnsized(input);
  checkPayloadSize(draft, maxPayloadBytes);
  return draft;
}

/** `parseDraft` without the size limit: for a caller that checks sizes on bytes it packs anyway. */
export function parseDraftUnsized(input: DraftEvent): DraftEvent {
  if (!isEventType(input.type)) {
    fail(ErrorCode.UnknownEventType, `Unknown event type ${JSON.stringify(input.type)}. Known types: ${Object.keys(catalog).join(', ')}.`, {
      type: input.type,
    });
  }
  validateId(input.id, 'event id');
  if (!Number.isInteger(input.time) || input.time < 0) {
    fail(ErrorCode.InvalidPayload, `Event ${input.type} has an invalid time ${String(input.time)}: expected integer milliseconds since the epoch.`);
  }
  const payload = parsePayload(input.type, catalog[input.type].version, input.payload);
  return { ...input, payload } as DraftEvent;
}

/** Throws `payload_too_large` when the draft's payload packs to more than `max` bytes. */
export function checkPayloadSize(draft: DraftEvent, max: number): void {
  const size = pack(draft.payload).byteLength;
  const type = draft.type;
  if (size > max) {
    fail(
      ErrorCode.PayloadTooLarge,
      `Event ${type} payload is ${size} bytes, over the limit of ${max} bytes. Store large content elsewhere and reference it, or raise maxPayloadBytes.`,
      { type, size, max },
    );
  }
}

/** Encodes a committed event as one msgpack frame (a plain map), with `committedAt` when known. */
export function encodeEvent(event: SessionEvent): Uint8Array {
  return pack({
    id: event.id,
    type: event.type,
    version: event.version,
    sessionId: event.sessionId,
    seq: event.seq,
    time: event.time,
    payload: event.payload,
    committedAt: event.committedAt,
  });
}

/** Where a frame came from and what it must match: said in every error, checked on every path. */
export interface FrameSource {
  /** e.g. "Message 12 on sessiond.events.ses_1", "Event row 5 of session ses_1", "Live message on ..." */
  describe: string;
  /** A hint for the reader of the error (what probably wrote it, what to do). */
  hint?: string;
  /** The session the frame must belong to (a subject's or a row's). */
  sessionId?: string;
  /** A committed event needs its seq; a live-only one has none. Default true. */
  seqRequired?: boolean;
  /** Stamped on the event by the log that read it; when given (even undefined), a frame's own value is not taken. */
  position?: number;
  committedAt?: number | undefined;
  events?: EventCatalog;
}

/**
 * The one decoder of an unpacked frame (a plain map), used by every path: single frames and export
 * files (`decodeEvent`), JetStream batches, live messages and SQLite rows. It checks the envelope
 * (ids, type, version, time, seq), brings an older payload up to the current version, validates the
 * payload, and throws a `SessiondError` with a codec code that says what was wrong and where.
 */
export function eventFromFrame(frame: unknown, source: FrameSource): SessionEvent {
  const bad = (code: SessiondError['code'], why: string, cause?: unknown): never => {
    throw new SessiondError(code, `${source.describe} is not a valid sessiond event: ${why}.${source.hint ? ` ${source.hint}` : ''}`, {
      cause,
      details: { source: source.describe },
    });
  };
  if (frame === null || typeof frame !== 'object' || Array.isArray(frame)) return bad(ErrorCode.DecodeFailed, 'expected a map');
  const f = frame as Record<string, unknown>;
  const { id, type, version, sessionId, seq, time, committedAt } = f;
  if (typeof id !== 'string' || typeof sessionId !== 'string') return bad(ErrorCode.DecodeFailed, 'it lacks id or sessionId');
  if (!Number.isInteger(version) || (version as number) < 1) return bad(ErrorCode.DecodeFailed, `version ${preview(version)} is not a whole number >= 1`);
  if (!Number.isInteger(time) || (time as number) < 0) return bad(ErrorCode.DecodeFailed, `time ${preview(time)} is not whole milliseconds since the epoch`);
  if (seq !== undefined || source.seqRequired !== false) {
    if (!Number.isInteger(seq) || (seq as number) < 1) return bad(ErrorCode.DecodeFailed, `seq ${preview(seq)} is not a whole number >= 1`);
  }
  if (committedAt !== undefined && (!Number.isInteger(committedAt) || (committedAt as number) < 0))
    return bad(ErrorCode.DecodeFailed, `committedAt ${preview(committedAt)} is not whole milliseconds`);
  if (source.sessionId !== undefined && sessionId !== source.sessionId)
    return bad(ErrorCode.DecodeFailed, `it belongs to session ${preview(sessionId)}, not ${source.sessionId}`);
  const events: EventCatalog = source.events ?? (catalog as EventCatalog);
  if (typeof type !== 'string' || !Object.hasOwn(events, type))
    return bad(ErrorCode.UnknownEventType, `unknown event type ${preview(type)} (event ${id}, session ${sessionId}): upgrade sessiond, or skip the event`);
  try {
    validateId(sessionId, 'session id');
    validateId(id, 'event id');
  } catch (err) {
    return bad(ErrorCode.InvalidId, messageOf(err), err);
  }
  let payload: unknown;
  try {
    payload = parsePayload(type as EventType, version as number, f.payload, events);
  } catch (err) {
    return bad(isSessiondError(err) ? err.code : ErrorCode.InvalidPayload, messageOf(err), err);
  }
  const event: Record<string, unknown> = { id, type, version: events[type]!.version, sessionId, time, payload };
  if (seq !== undefined) event.seq = seq;
  const position = source.position ?? f.position;
  if (typeof position === 'number') event.position = position;
  const committed = 'committedAt' in source ? source.committedAt : committedAt;
  if (committed !== undefined) event.committedAt = committed;
  return event as SessionEvent;
}

/** Decodes and fully validates one frame (an export file's, a test's). Throws a `SessiondError` (codec codes) on anything wrong. */
export function decodeEvent(bytes: Uint8Array, options: { maxPayloadBytes?: number; source?: FrameSource } = {}): SessionEvent {
  const max = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  const source = options.source ?? { describe: `Event frame (${bytes.byteLength} bytes)` };
  if (bytes.byteLength > max + 4096) {
    fail(ErrorCode.PayloadTooLarge, `${source.describe} is ${bytes.byteLength} bytes, over the limit of ${max} bytes for a payload.`, {
      size: bytes.byteLength,
      max,
    });
  }
  let raw: unknown;
  try {
    raw = unpack(bytes);
  } catch (err) {
    fail(
      ErrorCode.DecodeFailed,
      `${source.describe} is not a valid sessiond event: invalid msgpack (${messageOf(err)}).${source.hint ? ` ${source.hint}` : ''}`,
      { size: bytes.byteLength },
      err,
    );
  }
  return eventFromFrame(raw, source);
}

/** Short JSON-safe text of a value, for error messages. */
export function preview(value: unknown, max = 120): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > max ? `${text.slice(0, max)}...` : text;
}
