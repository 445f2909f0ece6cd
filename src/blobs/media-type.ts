/**
 * A declared media type checked against the bytes' signature (their first bytes, "magic numbers"),
 * for the types a model reads as images or documents. Pure: no I/O, the bytes' head only.
 *
 *   mediaTypeMismatch('image/png', head)   // undefined, or why the bytes are not a PNG
 *
 * A type without a known signature (text/plain, application/json, application/octet-stream...) passes:
 * it cannot be told from its bytes.
 */
import { InvalidInputError, ErrorCode } from '../errors.ts';

/** How many leading bytes the check needs (WebP's `RIFF....WEBP` is the longest). */
export const SIGNATURE_BYTES = 12;

type Signature = { describe: string; matches: (b: Uint8Array) => boolean };

const startsWith = (b: Uint8Array, at: number, bytes: readonly number[]) => b.length >= at + bytes.length && bytes.every((x, i) => b[at + i] === x);
const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));

const SIGNATURES: Record<string, Signature> = {
  'image/png': { describe: '89 50 4e 47 0d 0a 1a 0a', matches: (b) => startsWith(b, 0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
  'image/jpeg': { describe: 'ff d8 ff', matches: (b) => startsWith(b, 0, [0xff, 0xd8, 0xff]) },
  'image/gif': { describe: '"GIF87a" or "GIF89a"', matches: (b) => startsWith(b, 0, ascii('GIF87a')) || startsWith(b, 0, ascii('GIF89a')) },
  'image/webp': { describe: '"RIFF", 4 bytes of size, "WEBP"', matches: (b) => startsWith(b, 0, ascii('RIFF')) && startsWith(b, 8, ascii('WEBP')) },
  'application/pdf': { describe: '"%PDF-"', matches: (b) => startsWith(b, 0, ascii('%PDF-')) },
};
/** Names some senders use for a type above. */
const ALIASES: Record<string, string> = { 'image/jpg': 'image/jpeg', 'image/pjpeg': 'image/jpeg', 'application/x-pdf': 'application/pdf' };

/** The media types whose signature is checked. */
export const CHECKED_MEDIA_TYPES: readonly string[] = Object.keys(SIGNATURES);

// RFC 6838 names: type "/" subtype, each 1-127 of these characters, then optional parameters
const MEDIA_TYPE = /^([a-z0-9][a-z0-9!#$&^_.+-]{0,126})\/([a-z0-9][a-z0-9!#$&^_.+-]{0,126})\s*(;.*)?$/i;

/**
 * `mediaType` without parameters, lower case, an alias replaced by its type (`image/jpg` ->
 * `image/jpeg`); a string that is not a media type is refused, saying what one looks like.
 */
export function essenceOf(mediaType: string): string {
  const m = typeof mediaType === 'string' ? MEDIA_TYPE.exec(mediaType.trim()) : null;
  if (!m) {
    throw new InvalidInputError(
      `Invalid media type ${JSON.stringify(mediaType)}: give type/subtype, such as image/png, application/pdf or application/octet-stream.`,
      { code: ErrorCode.InvalidPayload, details: { mediaType } },
    );
  }
  const essence = `${m[1]}/${m[2]}`.toLowerCase();
  return ALIASES[essence] ?? essence;
}

/** The checked type whose signature `head` has (undefined: none of them). */
export function sniffMediaType(head: Uint8Array): string | undefined {
  return CHECKED_MEDIA_TYPES.find((t) => SIGNATURES[t]!.matches(head));
}

const hex = (b: Uint8Array) => [...b.subarray(0, SIGNATURE_BYTES)].map((x) => x.toString(16).padStart(2, '0')).join(' ');

/**
 * Why bytes starting with `head` (at least their first `SIGNATURE_BYTES`, or all of them when
 * fewer) are not of `mediaType`; undefined when they may be (a matching signature, or a type
 * without a known one). Refuses a malformed media type (see `essenceOf`).
 */
export function mediaTypeMismatch(mediaType: string, head: Uint8Array): string | undefined {
  const essence = essenceOf(mediaType);
  const signature = SIGNATURES[essence];
  if (!signature || signature.matches(head)) return undefined;
  const seen = sniffMediaType(head);
  const start = head.length === 0 ? 'no bytes at all' : `bytes starting ${hex(head)}`;
  return `declared ${essence} but the content is ${start}${seen ? `, which is ${seen}` : ''} (${essence} starts ${signature.describe}): declare the type the content has${seen ? ` (${seen})` : ''}, or send the right file`;
}
