/**
 * The `upload` and `blob` commands: clients put blobs into the worker's blob store in chunks, and
 * read a blob a session references, with their user's reach (the blob bucket itself is the
 * workers' only: it holds every tenant's blobs). Shapes: command-protocol.ts; docs/protocol.md.
 *
 * An upload is stateless across workers: a chunk that is not the last is staged as its own object
 * (blob-staging.ts, `upload.<scope>.<uploadId>.<offset>`), and the worker that takes the last one
 * reads the staged chunks in order, puts the whole through the store's checks (hash, size, media
 * type) and removes them. It grants its owner (a tenant, or the `owner` a trusted caller names)
 * the use of the blob in admissions (blob-grants.ts).
 */
import type { BlobGrants } from '../blobs/blob-grants.ts';
import { checkSha256, type BlobRef, type BlobStore } from '../blobs/blob-store.ts';
import { checkUploadId, stagedName, uploadScope, type BlobStaging } from '../blobs/blob-staging.ts';
import { essenceOf } from '../blobs/media-type.ts';
import { ErrorCode, InvalidInputError, NotFoundError, PermissionError, SessiondError, echo, isSessiondError } from '../errors.ts';
import { blobRefsOf } from '../events/blob-refs.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { checkOwner } from '../sessions/owner.ts';
import { EVENTS_PAGE, MAX_BLOB_READ_BYTES, MAX_UPLOAD_CHUNK_BYTES, type BlobCommand, type CommandResults, type UploadCommand } from './command-protocol.ts';

export interface BlobCommandContext {
  /** The worker's blob store; without one both commands answer `unavailable`. */
  store: BlobStore | undefined;
  maxBlobBytes: number;
  /** The tenant the command was sent as (its uploads are staged apart), undefined on the trusted subjects. */
  tenant: string | undefined;
  /** Where an upload records that its owner may reference the blob (the store's own when absent). */
  grants?: BlobGrants | undefined;
}

const wholeNumber = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function noStore(): SessiondError {
  return new SessiondError(
    ErrorCode.Unavailable,
    'This worker keeps no blob store, so it cannot take or serve blobs: run the workers with the blob bucket (sessiond setup creates SESSIOND_BLOBS), or send small parts inline.',
  );
}

/** One chunk of an upload: staged, or (the last) assembled with the staged ones into the blob. */
export async function uploadChunk(request: UploadCommand, ctx: BlobCommandContext): Promise<CommandResults['upload']> {
  const uploadId = checkUploadId(request.uploadId);
  const { offset, size, sha256 } = request;
  if (!wholeNumber(offset)) throw new InvalidInputError(`Invalid upload: offset must be a whole number of bytes >= 0, got ${echo(offset)}.`);
  if (size !== undefined && !wholeNumber(size)) throw new InvalidInputError(`Invalid upload: size must be a whole number of bytes >= 0, got ${echo(size)}.`);
  // the declared size is refused before anything is read
  if (size !== undefined && size > ctx.maxBlobBytes) throw tooLarge(size, ctx.maxBlobBytes);
  essenceOf(request.mediaType);
  if (sha256 !== undefined) checkSha256(sha256, 'upload sha256');
  const owner = uploadOwner(request.owner, ctx.tenant);
  if (typeof request.data !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(request.data)) {
    throw new InvalidInputError("Invalid upload: data must be the chunk's bytes in base64 (standard alphabet, with padding).");
  }
  if (request.data.length > Math.ceil(MAX_UPLOAD_CHUNK_BYTES / 3) * 4) {
    throw new InvalidInputError(`Invalid upload: a chunk is at most ${MAX_UPLOAD_CHUNK_BYTES} bytes; send the blob in more chunks.`);
  }
  const bytes = Buffer.from(request.data, 'base64');
  const end = offset + bytes.length;
  if (end > ctx.maxBlobBytes) throw tooLarge(end, ctx.maxBlobBytes);
  if (size !== undefined && end > size)
    throw new InvalidInputError(`Invalid upload: this chunk ends at byte ${end}, past the blob's declared size of ${size}.`);
  if (!ctx.store) throw noStore();
  const scope = uploadScope(ctx.tenant);
  if (sha256 === undefined) {
    if (bytes.length === 0) throw new InvalidInputError('Invalid upload: a chunk that is not the last must carry bytes; the last one carries sha256.');
    const staging = stagingOf(ctx.store);
    await staging.stage(stagedName(scope, uploadId, offset), bytes);
    return { received: end };
  }
  if (size === undefined || size !== end) {
    throw new InvalidInputError(
      `Invalid upload: the last chunk (the one with sha256) must give the blob's size, and end there: it ends at byte ${end}, size is ${echo(size)}.`,
    );
  }
  const staged: string[] = [];
  const store = ctx.store;
  const chunks = async function* (): AsyncIterable<Uint8Array> {
    for (let at = 0; at < offset; ) {
      const name = stagedName(scope, uploadId, at);
      const chunk = await stagingOf(store).staged(name);
      if (chunk === undefined || chunk.length === 0 || at + chunk.length > offset) throw missingChunk(uploadId, at);
      staged.push(name);
      yield chunk;
      at += chunk.length;
    }
    yield bytes;
  };
  let blob: BlobRef;
  try {
    blob = await store.put(chunks(), { mediaType: request.mediaType, expectedSha256: sha256, maxBytes: ctx.maxBlobBytes });
  } catch (err) {
    // the last chunk sent again after a worker assembled it: the staged chunks are gone, the blob is there
    if (isSessiondError(err, ErrorCode.NotFound) && err.details['uploadId'] === uploadId && (await store.has(sha256))) {
      if (owner !== undefined) await ctx.grants?.grant(owner, sha256);
      return { received: end, blob: { sha256, size, mediaType: request.mediaType } };
    }
    // a refused upload is over: its chunks go (those not found are the orphan sweep's)
    await unstageAll(store, staged);
    throw err;
  }
  await unstageAll(store, staged);
  if (owner !== undefined) await ctx.grants?.grant(owner, blob.sha256);
  return { received: end, blob };
}

/** Who the upload is for: a tenant uploads for itself; a trusted caller for the owner it names (or none). */
function uploadOwner(owner: unknown, tenant: string | undefined): string | undefined {
  if (owner === undefined) return tenant;
  const named = checkOwner(owner);
  if (tenant !== undefined && named !== tenant) {
    throw new PermissionError(`A tenant uploads for itself: tenant ${tenant} sent owner ${echo(owner)}. Leave owner out on a tenant's subject.`);
  }
  return named;
}

function stagingOf(store: BlobStore): BlobStaging {
  if (store.staging) return store.staging;
  throw new SessiondError(
    ErrorCode.Unavailable,
    `This worker's blob store cannot stage chunks: send the blob in one request (at most ${MAX_UPLOAD_CHUNK_BYTES} bytes), or run the workers on NATS with the blob bucket.`,
  );
}

async function unstageAll(store: BlobStore, names: string[]): Promise<void> {
  const staging = store.staging;
  if (!staging) return;
  // what is left (a removal that fails) is the orphan sweep's
  await Promise.all(names.map((name) => staging.unstage(name).catch(() => false)));
}

function missingChunk(uploadId: string, at: number): NotFoundError {
  return new NotFoundError(
    `Upload ${uploadId} has no chunk staged at offset ${at}: it was never sent, or it was removed (a finished or abandoned upload). Send the upload again from offset 0.`,
    { details: { uploadId, offset: at } },
  );
}

function tooLarge(size: number, max: number): SessiondError {
  return new SessiondError(
    ErrorCode.PayloadTooLarge,
    `The blob is ${size} bytes or more, over the worker's limit of ${max} bytes for one blob: refused before reading it. Send a smaller file, or raise the workers' maxBlobBytes (sessiond start --max-blob-bytes).`,
    { details: { size, maxBlobBytes: max } },
  );
}

/** What reads a session's events: the worker's engine, or a tenant's view of it (which answers not_found for another owner's session). */
export type EventReader = (sessionId: string, options: { afterSeq: number; limit: number }) => Promise<SessionEvent[]>;

/**
 * A chunk of the blob `sha256` of session `sessionId`, when the caller's `events` reach the session
 * and one of its events references the blob (a prompt part or a tool result, as `blobRefsOf` reads
 * them); `not_found` otherwise, one answer for every case (a session that is not the caller's, one
 * with no such reference, a blob not stored). With `seq` (the first reply's) only that event is read.
 */
export async function readBlobChunk(request: BlobCommand, events: EventReader, ctx: BlobCommandContext): Promise<CommandResults['blob']> {
  const sha256 = checkSha256(request.sha256);
  const offset = request.offset ?? 0;
  if (!wholeNumber(offset)) throw new InvalidInputError(`Invalid blob request: offset must be a whole number of bytes >= 0, got ${echo(offset)}.`);
  const { seq } = request;
  if (seq !== undefined && (!wholeNumber(seq) || seq === 0))
    throw new InvalidInputError(`Invalid blob request: seq must be the sequence (>= 1) of the event that references the blob, got ${echo(seq)}.`);
  const notFound = () =>
    new NotFoundError(
      `Blob ${sha256} is not referenced by session ${request.sessionId}${seq === undefined ? '' : ` at seq ${seq}`}, or the session is not one you may read: ask with a session whose events reference it.`,
      { details: { sha256 } },
    );
  let found: { ref: BlobRef; seq: number } | undefined;
  try {
    found = await referenceIn(request.sessionId, sha256, events, seq);
  } catch (err) {
    if (isSessiondError(err, ErrorCode.NotFound)) throw notFound();
    throw err;
  }
  if (found === undefined) throw notFound();
  const { ref } = found;
  if (!ctx.store) throw noStore();
  if (offset > ref.size) throw new InvalidInputError(`Invalid blob request: offset ${offset} is past the blob's ${ref.size} bytes.`);
  const chunk = Buffer.alloc(Math.min(MAX_BLOB_READ_BYTES, ref.size - offset));
  let filled = 0;
  try {
    // only this chunk's bytes are read from the store, not the ones before it
    if (chunk.length > 0) {
      for await (const piece of ctx.store.read(sha256, { offset, length: chunk.length })) {
        filled += Buffer.from(piece.buffer, piece.byteOffset, piece.length).copy(chunk, filled);
      }
    }
  } catch (err) {
    if (isSessiondError(err, ErrorCode.NotFound)) throw notFound();
    throw err;
  }
  const data = chunk.subarray(0, filled).toString('base64');
  return { sha256, size: ref.size, mediaType: ref.mediaType, offset, data, more: offset + filled < ref.size, seq: found.seq };
}

/** The first reference to `sha256` in the session's events (from `seq` only, when given), and where it is. */
async function referenceIn(sessionId: string, sha256: string, events: EventReader, seq?: number): Promise<{ ref: BlobRef; seq: number } | undefined> {
  for (let afterSeq = seq === undefined ? 0 : seq - 1; ; ) {
    const page = await events(sessionId, { afterSeq, limit: seq === undefined ? EVENTS_PAGE : 1 });
    for (const event of page) {
      const ref = blobRefsOf(event).find((r) => r.sha256 === sha256);
      if (ref) return { ref, seq: event.seq };
    }
    if (seq !== undefined || page.length < EVENTS_PAGE) return undefined;
    afterSeq = page[page.length - 1]!.seq;
  }
}
