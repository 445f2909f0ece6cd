import { randomBytes } from 'node:crypto';
import { ErrorCode, SessiondError, boundText, echo } from './errors.ts';

/** Longest id accepted anywhere an id can become a NATS subject token. */
export const MAX_ID_LENGTH = 128;

// A NATS subject token must not contain '.', '*', '>' or whitespace; we also refuse control
// characters and anything outside printable ASCII so ids survive every transport unchanged.
const ID_PATTERN = /^[A-Za-z0-9_\-:+=@]+$/;

/** Whether a value is text an id may be (what `validateId` accepts), without throwing. */
export function isIdText(value: unknown): boolean {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_ID_LENGTH && ID_PATTERN.test(value);
}

/**
 * Checks an id that will be used as a NATS subject token or a database key and returns it.
 * Throws `invalid_id` naming the id's role, what is wrong and what is allowed.
 */
export function validateId(value: unknown, role = 'id'): string {
  // the common case first, with nothing allocated: hot paths check every id they touch
  if (isIdText(value)) return value as string;
  return invalidId(value, role);
}

function invalidId(value: unknown, role: string): never {
  const fail = (why: string): never => {
    throw new SessiondError(
      ErrorCode.InvalidId,
      `Invalid ${role} ${echo(value)}: ${why}. Use 1-${MAX_ID_LENGTH} characters from A-Z a-z 0-9 _ - : + = @ (no dots, spaces, wildcards or control characters).`,
      // what was sent, cut (a hostile id can be megabytes, or nested deep)
      { details: { role, value: typeof value === 'string' ? boundText(value) : typeof value === 'object' && value !== null ? echo(value) : value } },
    );
  };
  if (typeof value !== 'string') return fail(`expected a string, got ${value === null ? 'null' : typeof value}`);
  if (value.length === 0) return fail('it is empty');
  if (value.length > MAX_ID_LENGTH) return fail(`it is ${value.length} characters long`);
  const bad = [...value].find((c) => !ID_PATTERN.test(c)) ?? '';
  const shown = /[\x00-\x1f\x7f]/.test(bad) ? `control character U+${bad.charCodeAt(0).toString(16).padStart(4, '0')}` : JSON.stringify(bad);
  return fail(`it contains ${shown}`);
}

export function isValidId(value: unknown): value is string {
  try {
    validateId(value);
    return true;
  } catch {
    return false;
  }
}

/** Source of new ids; injected so tests and replays are deterministic. */
export interface IdSource {
  next(prefix: string): string;
}

/**
 * Random ids that sort by creation time: `<prefix>_<32 hex digits>`, the first 12 the creation
 * time in ms (as in UUIDv7), then a counter that orders ids made in the same ms, then random bits.
 * Time-ordered ids land at the end of a database index instead of at a random page: one commit of
 * a busy worker dirties a few index pages, not one per event (about 4x cheaper SQLite commits).
 * Nothing reads the time back: order and uniqueness do not depend on clocks agreeing.
 */
export const randomIds: IdSource = {
  next: (prefix) => `${prefix}_${timeOrderedHex()}`,
};

let lastMs = 0;
let counter = 0;
function timeOrderedHex(): string {
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    counter = 0;
  } else counter = (counter + 1) & 0xffff;
  return `${lastMs.toString(16).padStart(12, '0')}${counter.toString(16).padStart(4, '0')}${random16Hex()}`;
}

// random bits drawn 4 KiB at a time (one getrandom call per 512 ids, as randomUUID caches too)
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let offset = POOL_BYTES;
function random16Hex(): string {
  if (offset + 8 > pool.length) {
    pool = randomBytes(POOL_BYTES);
    offset = 0;
  }
  offset += 8;
  return pool.toString('hex', offset - 8, offset);
}

/** Deterministic ids for tests: `<prefix>_<seed><counter>`. */
export function sequentialIds(seed = ''): IdSource {
  let n = 0;
  return { next: (prefix) => `${prefix}_${seed}${String(++n).padStart(6, '0')}` };
}
