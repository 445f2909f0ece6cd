/**
 * The blob store port: payloads too large for an event (images, documents, long tool results)
 * kept beside the log, addressed by their content's SHA-256. Two implementations, one contract
 * suite (src/testing/blob-store-contract.ts): the SQLite table `blob` (src/storage/sqlite/
 * sqlite-blob-store.ts) and a JetStream Object Store bucket (src/nats/object-blob-store.ts).
 * Why this shape: docs/architecture.md ("Design notes: storage").
 *
 *   const ref = await store.put(bytesOrChunks, { mediaType: 'image/png', maxBytes: 64 << 20 });
 *   const bytes = await store.get(ref.sha256);   // verified against the hash
 *   for await (const part of store.read(ref.sha256, { offset: 1 << 20, length: 512 << 10 })) ...
 *
 * The store knows content only: which session references which blob, and when the last reference
 * is gone, is decided above it. `BlobIntake` holds the checks every implementation makes on the
 * way in, so they refuse the same input with the same error.
 */
import { createHash, type Hash } from 'node:crypto';
import { CorruptDataError, ErrorCode, InvalidInputError, NotFoundError, SessiondError, echo } from '../errors.ts';
import { SIGNATURE_BYTES, essenceOf, mediaTypeMismatch } from './media-type.ts';
import type { BlobStaging } from './blob-staging.ts';

/** A blob as an event refers to it: its content's hash (SHA-256, lower-case hex), its size in bytes, its media type. */
export interface BlobRef {
  sha256: string;
  size: number;
  mediaType: string;
}

/**
 * A blob as the store lists it: with when its content was last put (ms since the epoch, the store's
 * clock), for a sweep's grace period. A put of content already stored moves it forward: an admission
 * that re-uses a blob makes it young again until its event is appended.
 */
export interface StoredBlob extends BlobRef {
  storedAt: number;
}

export interface PutBlobOptions {
  /** What the bytes are (`image/png`); checked against their signature for the types `media-type.ts` knows. */
  mediaType: string;
  /** The hash the caller says the bytes have: refused when they do not (and a stream is then written to its final place as it is read). */
  expectedSha256?: string | undefined;
  /** The most bytes accepted (default `DEFAULT_MAX_BLOB_BYTES`): a stream is refused as soon as it passes it, before it is read whole. */
  maxBytes?: number | undefined;
}

/** The bytes of a put: whole, or as chunks read one at a time (a file, a request body). */
export type BlobSource = Uint8Array | AsyncIterable<Uint8Array> | Iterable<Uint8Array>;

export const DEFAULT_MAX_BLOB_BYTES = 64 * 1024 * 1024;

/** A part of a blob: `length` bytes from byte `offset` (to the end without `length`). */
export interface BlobRange {
  offset: number;
  length?: number | undefined;
}

export interface BlobStore {
  /**
   * Stores the bytes under their hash and returns the reference (the media type as declared).
   * Idempotent: the same content stored again is stored once (the media type first stored stays;
   * each reference carries its own). Refuses (nothing stored) bytes that do not match
   * `expectedSha256` (`invalid_payload`), more than `maxBytes` (`payload_too_large`, before the rest
   * is read), a media type their signature contradicts (`invalid_payload`).
   */
  put(source: BlobSource, options: PutBlobOptions): Promise<BlobRef>;
  /** The blob's bytes, checked against its hash (`NotFoundError` naming it when missing, `CorruptDataError` when the stored bytes differ). */
  get(sha256: string): Promise<Uint8Array>;
  /**
   * The blob's bytes in chunks. Whole (no `range`): the hash is checked when the last one has been
   * read (a mismatch throws then). With a `range`: only its bytes, at a cost of about the bytes read
   * (the bytes before `offset` are not transferred). A part cannot be checked against the whole's
   * hash, so a ranged read trusts the stored bytes: SQLite checks nothing; the Object Store checks
   * that the object records this content's digest and that its chunks have their recorded sizes.
   * A range that is not whole numbers >= 0, or that passes the blob's end, is refused
   * (`invalid_option`); `{ offset: size, length: 0 }` reads nothing.
   */
  read(sha256: string, range?: BlobRange): AsyncIterable<Uint8Array>;
  has(sha256: string): Promise<boolean>;
  /** Removes the blob; false when it was not there. Whether anything still references it is the caller's question. */
  delete(sha256: string): Promise<boolean>;
  /**
   * Removes the blob only if its content was last put before `before` (ms since the epoch), as one
   * step against a concurrent put: a put of the same content either lands first (the blob is kept)
   * or after (it stores the blob again). False when it was kept or not there. What a delete and the
   * sweep use, so an admission re-using a blob cannot lose it (src/blobs/reclaim.ts).
   */
  deleteIfIdle(sha256: string, before: number): Promise<boolean>;
  /**
   * Marks a stored blob as put now (its `storedAt` moves to now, as a put of its content does) without reading or
   * writing its bytes, as one step against `deleteIfIdle`; false when it is not stored. What a fork
   * does to the blobs it copies before appending, so a delete or a sweep meanwhile keeps them.
   */
  touch(sha256: string): Promise<boolean>;
  /** Every stored blob, in no promised order (a sweep compares them with the references it knows). */
  list(): AsyncIterable<StoredBlob>;
  /** Where chunked uploads stage their chunks (blob-staging.ts), when this store can (the Object Store bucket). */
  readonly staging?: BlobStaging | undefined;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** `sha256` if it is a SHA-256 in lower-case hex, else refused saying so. */
export function checkSha256(sha256: unknown, what = 'blob hash'): string {
  if (typeof sha256 !== 'string' || !SHA256_HEX.test(sha256)) {
    throw new InvalidInputError(`Invalid ${what} ${JSON.stringify(sha256)}: a blob is named by the SHA-256 of its bytes, 64 lower-case hex characters.`, {
      code: ErrorCode.InvalidId,
      details: { sha256 },
    });
  }
  return sha256;
}

/** A range's shape checked (whole numbers, 0 or more), else refused saying what to give. */
export function checkRange(range: unknown): BlobRange {
  const whole = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
  const r = range as BlobRange | null;
  if (r === null || typeof r !== 'object' || !whole(r.offset) || (r.length !== undefined && !whole(r.length))) {
    const shown = r !== null && typeof r === 'object' ? `offset ${echo(r.offset)}, length ${echo(r.length)}` : echo(range);
    throw new InvalidInputError(`Invalid blob range (${shown}): give { offset, length? } as whole numbers of bytes, 0 or more.`);
  }
  return r;
}

/** The range as [start, end) in a blob of `size` bytes; refused when it passes the blob's end. */
export function rangeWithin(range: BlobRange, size: number, sha256: string): { start: number; end: number } {
  const end = range.length === undefined ? size : range.offset + range.length;
  if (range.offset > size || end > size) {
    throw new InvalidInputError(
      `Invalid blob range: bytes ${range.offset} to ${end} pass the end of blob ${sha256}, which has ${size} bytes. Read from an offset of at most ${size}, up to its end.`,
      { details: { sha256, size, offset: range.offset, end } },
    );
  }
  return { start: range.offset, end };
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The error for a blob a store does not hold. */
export function blobNotFound(sha256: string, where: string): NotFoundError {
  return new NotFoundError(`Blob ${sha256} is not in ${where}: it was never stored, or it was deleted.`, { details: { sha256 } });
}

/** The error for stored bytes that do not hash to their name. */
export function blobCorrupt(sha256: string, actual: string, size: number, where: string): CorruptDataError {
  return new CorruptDataError(
    `Blob ${sha256} in ${where} is corrupt: its ${size} stored bytes hash to ${actual}. It was changed after it was stored; store the original bytes again to replace it.`,
    { details: { sha256, actual, size } },
  );
}

/**
 * The checks on the way in, fed chunk by chunk: counts and refuses past `maxBytes` at once,
 * checks the signature as soon as its bytes are in, hashes, and at the end compares with
 * `expectedSha256`. One per put.
 */
export class BlobIntake {
  readonly mediaType: string;
  readonly maxBytes: number;
  readonly expectedSha256: string | undefined;
  private readonly hash: Hash = createHash('sha256');
  private size = 0;
  private head: Uint8Array | undefined = new Uint8Array(0);

  constructor(options: PutBlobOptions) {
    if (options === null || typeof options !== 'object') throw new InvalidInputError('A blob put needs options: { mediaType } at least.');
    essenceOf(options.mediaType);
    this.mediaType = options.mediaType;
    const max = options.maxBytes ?? DEFAULT_MAX_BLOB_BYTES;
    if (!Number.isSafeInteger(max) || max < 0) {
      throw new InvalidInputError(`Invalid maxBytes ${String(options.maxBytes)}: give a whole number of bytes, 0 or more (default ${DEFAULT_MAX_BLOB_BYTES}).`);
    }
    this.maxBytes = max;
    this.expectedSha256 = options.expectedSha256 === undefined ? undefined : checkSha256(options.expectedSha256, 'expectedSha256');
  }

  /** Takes the next chunk; throws (and the put stops reading) when it passes the limit or the signature is wrong. */
  accept(chunk: Uint8Array): void {
    if (!(chunk instanceof Uint8Array)) throw new InvalidInputError(`A blob's chunks must be bytes (Uint8Array), got ${typeof chunk}.`);
    this.size += chunk.length;
    if (this.size > this.maxBytes) {
      throw new SessiondError(
        ErrorCode.PayloadTooLarge,
        `The blob is over the limit of ${this.maxBytes} bytes (more than ${this.size - chunk.length} read so far, ${this.size} with this chunk): refused before reading the rest. Send a smaller file, or raise the limit.`,
        { details: { maxBytes: this.maxBytes, read: this.size } },
      );
    }
    if (this.head !== undefined) {
      const head = new Uint8Array(Math.min(SIGNATURE_BYTES, this.head.length + chunk.length));
      head.set(this.head.subarray(0, head.length));
      head.set(chunk.subarray(0, head.length - this.head.length), this.head.length);
      this.head = head;
      if (head.length >= SIGNATURE_BYTES) this.checkSignature();
    }
    this.hash.update(chunk);
  }

  /** After the last chunk: the reference, or the refusal of a hash that does not match (or a signature too short to have). */
  finish(): BlobRef {
    if (this.head !== undefined) this.checkSignature();
    const sha256 = this.hash.digest('hex');
    if (this.expectedSha256 !== undefined && sha256 !== this.expectedSha256) {
      throw new InvalidInputError(
        `The blob's ${this.size} bytes hash to ${sha256}, not ${this.expectedSha256} as given: they were changed or cut short on the way. Send the bytes again, or give their real hash.`,
        { code: ErrorCode.InvalidPayload, details: { expected: this.expectedSha256, actual: sha256, size: this.size } },
      );
    }
    return { sha256, size: this.size, mediaType: this.mediaType };
  }

  private checkSignature(): void {
    const why = mediaTypeMismatch(this.mediaType, this.head!);
    this.head = undefined;
    if (why !== undefined) {
      throw new InvalidInputError(`The blob's media type does not match its bytes: ${why}.`, {
        code: ErrorCode.InvalidPayload,
        details: { mediaType: this.mediaType },
      });
    }
  }
}

/** The chunks of a source, one at a time. */
export async function* chunksOf(source: BlobSource): AsyncIterable<Uint8Array> {
  if (source instanceof Uint8Array) {
    yield source;
    return;
  }
  if (source === null || typeof source !== 'object' || (!(Symbol.asyncIterator in source) && !(Symbol.iterator in source))) {
    throw new InvalidInputError('A blob is put as bytes (Uint8Array) or an iterable of byte chunks (a file stream, a request body).');
  }
  yield* source as AsyncIterable<Uint8Array>;
}

/**
 * Reads a source whole through the intake's checks (stopping at the first refusal, so at most
 * `maxBytes` plus one chunk is held) and returns its bytes with the reference.
 */
export async function readWhole(source: BlobSource, intake: BlobIntake): Promise<{ bytes: Uint8Array; ref: BlobRef }> {
  if (source instanceof Uint8Array) {
    intake.accept(source);
    return { bytes: source, ref: intake.finish() };
  }
  const chunks: Uint8Array[] = [];
  for await (const chunk of chunksOf(source)) {
    intake.accept(chunk);
    chunks.push(chunk);
  }
  const ref = intake.finish();
  if (chunks.length === 1) return { bytes: chunks[0]!, ref };
  const bytes = new Uint8Array(ref.size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.length;
  }
  return { bytes, ref };
}
