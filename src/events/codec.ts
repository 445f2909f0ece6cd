/**
 * msgpack codec for events on the wire and in the log. Plain maps only (no msgpackr records or
 * shared structures), so every frame decodes on its own, years later, in any language.
 *
 * Decoding never throws anything but a `SessiondError` with one of the codec codes, and the message
 * says what was wrong: bad bytes, an unknown type, a version this build cannot read, a payload that
 * fails its schema, or a payload over the size limit.
 */
import { Packr } from 'msgpackr';
import { z } from 'zod';
import { ErrorCode, SessiondError, messageOf } from '../errors.ts';
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
    if (v === undefined) { delete (out ??= { ...value })[key]; continue; } // left out, never nil
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

/** Validates a payload against its type's schema and returns the parsed payload (defaults applied). */
export function parsePayload<T extends EventType>(type: T, version: number, payload: unknown): PayloadOf<T> {
  const entry = catalog[type];
  if (version === entry.version && typeof payload === 'object' && payload !== null && validated.get(payload) === type) return payload as PayloadOf<T>;
  if (version !== entry.version) {
    fail(ErrorCode.UnsupportedEventVersion,
      `Event ${type} has version ${version}, but this build reads version ${entry.version}. Upgrade sessiond (or replay with the version that wrote the log).`,
      { type, version, expected: entry.version });
  }
  const result = entry.schema.safeParse(payload);
  if (!result.success) {
    fail(ErrorCode.InvalidPayload, `Event ${type} has an invalid payload: ${z.prettifyError(result.error).replaceAll('\n', '; ')}`,
      { type, issues: result.error.issues });
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
    fail(ErrorCode.UnknownEventType, `Unknown event type ${JSON.stringify(input.type)}. Known types: ${Object.keys(catalog).join(', ')}.`, { type: input.type });
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
    fail(ErrorCode.PayloadTooLarge,
      `Event ${type} payload is ${size} bytes, over the limit of ${max} bytes. Store large content elsewhere and reference it, or raise maxPayloadBytes.`,
      { type, size, max });
  }
}

/** Encodes a committed event as one msgpack frame (a plain map), with `committedAt` when known. */
export function encodeEvent(event: SessionEvent): Uint8Array {
  return pack({
    id: event.id, type: event.type, version: event.version, sessionId: event.sessionId,
    seq: event.seq, time: event.time, payload: event.payload, committedAt: event.committedAt,
  });
}

const Envelope = z.object({
  id: z.string(),
  type: z.string(),
  version: z.number().int().positive(),
  sessionId: z.string(),
  seq: z.number().int().nonnegative(),
  time: z.number().int().nonnegative(),
  payload: z.unknown(),
  committedAt: z.number().int().nonnegative().optional(),
});

/** Decodes and fully validates one frame. Throws a `SessiondError` (codec codes) on anything wrong. */
export function decodeEvent(bytes: Uint8Array, options: { maxPayloadBytes?: number } = {}): SessionEvent {
  const max = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  if (bytes.byteLength > max + 4096) {
    fail(ErrorCode.PayloadTooLarge, `Event frame is ${bytes.byteLength} bytes, over the limit of ${max} bytes for a payload.`, { size: bytes.byteLength, max });
  }
  let raw: unknown;
  try {
    raw = unpack(bytes);
  } catch (err) {
    fail(ErrorCode.DecodeFailed, `Event frame is not valid msgpack (${bytes.byteLength} bytes): ${messageOf(err)}`, { size: bytes.byteLength }, err);
  }
  const env = Envelope.safeParse(raw);
  if (!env.success) {
    fail(ErrorCode.DecodeFailed, `Event frame is not an event envelope: ${z.prettifyError(env.error).replaceAll('\n', '; ')}`, { issues: env.error.issues });
  }
  const { type, version } = env.data;
  if (!isEventType(type)) {
    fail(ErrorCode.UnknownEventType, `Unknown event type ${JSON.stringify(type)} (event ${env.data.id}, session ${env.data.sessionId}). Upgrade sessiond, or skip the event.`, { type });
  }
  validateId(env.data.sessionId, 'session id');
  validateId(env.data.id, 'event id');
  const payload = parsePayload(type, version, env.data.payload);
  return { ...env.data, type, payload } as SessionEvent;
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
