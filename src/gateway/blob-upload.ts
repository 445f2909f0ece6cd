/**
 * `POST /v1/blobs`: a blob's raw bytes streamed from the request into the blob store, never held
 * whole; answered 201 with the reference a prompt part carries (`{ "type": "image", "blob": ref }`).
 * The token's owner may then reference it in admissions for an hour (blob-grants.ts). Embedded:
 * the engine's store and grants; on NATS: the client's `uploadBlob`, whose worker grants the owner.
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { ErrorCode, HttpError, InvalidInputError, SessiondError } from '../errors.ts';
import { DEFAULT_LIMITS } from '../input/limits.ts';
import type { BlobReference as BlobRef } from '../nats/command-protocol.ts';
import type { CommandTarget } from '../nats/command-service.ts';
import type { Sessions } from '../sessions/sessions.ts';

type BlobStore = NonNullable<CommandTarget['blobs']>;
type BlobGrants = NonNullable<CommandTarget['blobGrants']>;
const DEFAULT_MAX_BLOB_BYTES = DEFAULT_LIMITS.maxBlobBytes;

export interface UploadRequest {
  mediaType: string;
  /** Content-Length, when the request gave one. */
  size?: number;
  expectedSha256?: string;
  /** Who may reference the blob afterwards (the token's acting owner); none for a trusted caller. */
  owner?: string;
  maxBytes: number;
}

/** Puts the chunks as one blob and grants `owner` its use. */
export type BlobUploader = (source: AsyncIterable<Uint8Array>, request: UploadRequest) => Promise<BlobRef>;

type ClientUpload = (source: AsyncIterable<Uint8Array>, options: { mediaType: string; size?: number; owner?: string }) => Promise<BlobRef>;
type EmbeddedParts = { blobs?: BlobStore; blobGrants?: BlobGrants; execution?: { limits?: { maxBlobBytes?: number } } };

/** How the gateway stores uploads for what it serves (a client's `uploadBlob`, an engine's or host's store), and the largest it takes. */
export function blobUploaderOf(sessions: Omit<Sessions, 'close'>): { upload: BlobUploader; maxBytes: number } | undefined {
  const s = sessions as { uploadBlob?: ClientUpload; engine?: EmbeddedParts } & EmbeddedParts;
  if (typeof s.uploadBlob === 'function') {
    const upload: BlobUploader = (source, r) =>
      s.uploadBlob!(source, {
        mediaType: r.mediaType,
        ...(r.size === undefined ? {} : { size: r.size }),
        ...(r.owner === undefined ? {} : { owner: r.owner }),
      });
    return { upload, maxBytes: DEFAULT_MAX_BLOB_BYTES };
  }
  const parts = s.blobs ? s : s.engine;
  const store = parts?.blobs;
  if (!store) return undefined;
  const upload: BlobUploader = async (source, r) => {
    const ref = await store.put(source, { mediaType: r.mediaType, maxBytes: r.maxBytes, expectedSha256: r.expectedSha256 });
    if (r.owner !== undefined) await parts.blobGrants?.grant(r.owner, ref.sha256);
    return ref;
  };
  return { upload, maxBytes: parts.execution?.limits?.maxBlobBytes ?? DEFAULT_MAX_BLOB_BYTES };
}

const FORMS = /^(application\/x-www-form-urlencoded|multipart\/form-data)\b/i;

/** What the request says of its bytes: the media type (required; the store checks it), the declared length and hash; refused before any byte is read. */
export function uploadRequestOf(req: IncomingMessage, url: URL, maxBytes: number, owner: string | undefined): UploadRequest {
  const type = req.headers['content-type']?.trim();
  if (!type)
    throw new HttpError(
      415,
      ErrorCode.InvalidOption,
      "Say what the bytes are with Content-Type (e.g. Content-Type: image/png): it is the blob's media type, checked against its first bytes.",
    );
  if (FORMS.test(type))
    throw new HttpError(
      415,
      ErrorCode.InvalidOption,
      `Send the file's raw bytes with its own Content-Type, not a form (${type.split(';')[0]}): curl --data-binary @cat.png -H 'Content-Type: image/png'.`,
    );
  const header = req.headers['x-sessiond-sha256'];
  const sha = (Array.isArray(header) ? header[0] : header) ?? url.searchParams.get('sha256') ?? undefined;
  const expectedSha256 = sha?.trim().toLowerCase();
  if (expectedSha256 !== undefined && !/^[0-9a-f]{64}$/.test(expectedSha256))
    throw new HttpError(
      400,
      ErrorCode.InvalidId,
      `Invalid x-sessiond-sha256 (or ?sha256=) ${JSON.stringify(sha!.slice(0, 80))}: the SHA-256 of the bytes, 64 hex characters.`,
    );
  const length = req.headers['content-length'];
  const size = length === undefined ? undefined : Number(length);
  if (size !== undefined && size > maxBytes) throw tooLarge(maxBytes, `Content-Length says ${size} bytes`);
  return {
    mediaType: type,
    maxBytes,
    ...(size === undefined || !Number.isSafeInteger(size) ? {} : { size }),
    ...(expectedSha256 === undefined ? {} : { expectedSha256 }),
    ...(owner === undefined ? {} : { owner }),
  };
}

/**
 * The request's body as it arrives: counted (refused as it passes `maxBytes`), each chunk awaited
 * at most `idleMs` (a stalled body gets 408), and with a declared hash, hashed and checked before
 * its end is reported (so neither a store's put nor a NATS upload finishes with other bytes).
 */
export async function* bodyChunks(req: IncomingMessage, r: UploadRequest, idleMs: number): AsyncIterable<Uint8Array> {
  const hash = r.expectedSha256 === undefined ? undefined : createHash('sha256');
  const chunks = (req as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  let size = 0;
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new HttpError(
              408,
              'request_timeout',
              `No bytes of the upload arrived for ${idleMs} ms after ${size}: send the body without pauses (the gateway's --body-timeout sets how long it waits).`,
            ),
          ),
        idleMs,
      );
    });
    let next: IteratorResult<Buffer>;
    try {
      next = await Promise.race([chunks.next(), stalled]);
    } finally {
      clearTimeout(timer);
    }
    if (next.done) break;
    size += next.value.length;
    if (size > r.maxBytes) throw tooLarge(r.maxBytes, `${size} bytes have arrived`);
    hash?.update(next.value);
    yield next.value;
  }
  const actual = hash?.digest('hex');
  if (actual !== undefined && actual !== r.expectedSha256)
    throw new InvalidInputError(
      `The uploaded ${size} bytes hash to ${actual}, not ${r.expectedSha256} as x-sessiond-sha256 (or ?sha256=) says: they were changed or cut short on the way. Send them again, or give their real hash.`,
      { code: ErrorCode.InvalidPayload, details: { expected: r.expectedSha256, actual, size } },
    );
}

function tooLarge(max: number, what: string): SessiondError {
  return new SessiondError(
    ErrorCode.PayloadTooLarge,
    `The upload is over the limit of ${max} bytes for one blob (${what}): refused before reading the rest. Send a smaller file, or raise the workers' --max-blob-bytes.`,
    { details: { maxBytes: max } },
  );
}
