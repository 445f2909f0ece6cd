/**
 * Large prompt parts beside the log: at admission an inline image or file part over
 * `INLINE_PART_BYTES` is stored in the blob store and replaced by its reference; a reference a client
 * sent is checked against the store. Runs before the prompt's size check, so the prompt limit counts
 * the event and each blob counts against `maxBlobBytes` (why: docs/architecture.md, "Blobs in prompts").
 */
import type { BlobRef, BlobStore } from '../blobs/blob-store.ts';
import { SIGNATURE_BYTES, mediaTypeMismatch } from '../blobs/media-type.ts';
import { ErrorCode, SessiondError, isSessiondError } from '../errors.ts';
import type { Prompt, PromptPart } from '../events/catalog.ts';
import { INLINE_PART_BYTES, base64Bytes, checkPromptShape } from '../events/prompt.ts';

/**
 * The prompt with its large inline parts stored in `blobs` and replaced by their references, and
 * its references checked (the blob is there, of the declared size, its bytes of the declared type).
 * Without a store (a NATS worker whose blob bucket is not set up) large parts are left for the size
 * check to refuse and a reference is refused. Refusals name the part and say what to do.
 */
export async function storeBlobParts(prompt: unknown, blobs: BlobStore | undefined, maxBlobBytes: number): Promise<Prompt> {
  let checked: Prompt;
  try {
    checked = checkPromptShape(prompt);
  } catch (err) {
    throw invalid((err as Error).message);
  }
  if (typeof checked === 'string') return checked;
  if (!checked.some((p) => 'blob' in p || ('data' in p && base64Bytes(p.data) > INLINE_PART_BYTES))) return checked;
  const out: PromptPart[] = [];
  for (const [i, part] of checked.entries()) out.push(await storePart(part, i, blobs, maxBlobBytes));
  return out;
}

async function storePart(part: PromptPart, i: number, blobs: BlobStore | undefined, maxBlobBytes: number): Promise<PromptPart> {
  const where = `prompt part ${i} (${part.type})`;
  if (part.type !== 'image' && part.type !== 'file') return part;
  if ('blob' in part) {
    if (!blobs) throw noStore(where, part.blob.sha256);
    await checkRef(where, part.blob, blobs, maxBlobBytes);
    return part;
  }
  if (!('data' in part)) return part;
  const size = base64Bytes(part.data);
  if (size <= INLINE_PART_BYTES || !blobs) return part;
  if (size > maxBlobBytes) throw tooLarge(where, size, maxBlobBytes);
  let ref: BlobRef;
  try {
    ref = await blobs.put(Buffer.from(part.data, 'base64'), { mediaType: part.mediaType, maxBytes: maxBlobBytes });
  } catch (err) {
    if (isSessiondError(err)) throw new SessiondError(err.code, `Invalid input: ${where}: ${err.message}`, { cause: err, details: err.details });
    throw err;
  }
  return part.type === 'image' ? { type: 'image', blob: ref } : { type: 'file', blob: ref, ...(part.filename ? { filename: part.filename } : {}) };
}

/** A reference a client sent: the blob is stored, of the size it says, and its bytes are of its media type. */
async function checkRef(where: string, ref: BlobRef, blobs: BlobStore, maxBlobBytes: number): Promise<void> {
  if (ref.size > maxBlobBytes) throw tooLarge(where, ref.size, maxBlobBytes);
  // read in chunks, not whole: the size counted and the signature's first bytes kept
  let size = 0;
  let head = new Uint8Array(0);
  try {
    for await (const chunk of blobs.read(ref.sha256)) {
      if (head.length < SIGNATURE_BYTES) head = Buffer.concat([head, chunk.subarray(0, SIGNATURE_BYTES - head.length)]);
      size += chunk.length;
    }
  } catch (err) {
    if (isSessiondError(err, ErrorCode.NotFound)) {
      throw invalid(
        `${where} references blob ${ref.sha256}, which is not stored: store its bytes first (engine.blobs.put), or send them inline as { "data": "<base64>", "mediaType": "${ref.mediaType}" }`,
      );
    }
    throw err;
  }
  if (size !== ref.size) throw invalid(`${where} says blob ${ref.sha256} is ${ref.size} bytes, but it is ${size}: give its real size`);
  const why = mediaTypeMismatch(ref.mediaType, head);
  if (why) throw new SessiondError(ErrorCode.InvalidPayload, `Invalid input: ${where}: the blob's media type does not match its bytes: ${why}.`);
  // put again (stored once): the blob counts as put now, so a delete or a sweep before this
  // admission's event is appended keeps it (src/blobs/sweep.ts), or this stores it anew
  await blobs.put(bytes, { mediaType: ref.mediaType, expectedSha256: ref.sha256, maxBytes: maxBlobBytes });
}

function invalid(why: string): SessiondError {
  return new SessiondError(ErrorCode.InvalidOption, `Invalid input: ${why}.`);
}

function tooLarge(where: string, size: number, max: number): SessiondError {
  return new SessiondError(
    ErrorCode.PayloadTooLarge,
    `Invalid input: ${where} is ${size} bytes, over the limit of ${max} bytes for one image or file: send a smaller one, or raise the worker's maxBlobBytes (sessiond start --max-blob-bytes).`,
    { details: { size, maxBlobBytes: max } },
  );
}

function noStore(where: string, sha256: string): SessiondError {
  return invalid(
    `${where} references blob ${sha256}, but this worker keeps no blob store (on NATS the operator makes the Object Store bucket SESSIOND_BLOBS with sessiond setup, then restarts the workers): send the bytes inline or by URL`,
  );
}
