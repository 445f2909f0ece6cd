/**
 * Large prompt parts beside the log: at admission an inline image or file part over
 * `INLINE_PART_BYTES` is stored in the blob store and replaced by its reference; a reference a client
 * sent is checked against the store. Runs before the prompt's size check, so the prompt limit counts
 * the event and each blob counts against `maxBlobBytes` (why: docs/architecture.md, "Blobs in prompts").
 */
import type { BlobRef, BlobStore } from '../blobs/blob-store.ts';
import { ErrorCode, SessiondError, isSessiondError } from '../errors.ts';
import type { Prompt, PromptPart } from '../events/catalog.ts';
import { INLINE_PART_BYTES, base64Bytes, checkPromptShape } from '../events/prompt.ts';

/**
 * The prompt with its large inline parts stored in `blobs` and replaced by their references, and
 * its references checked (the blob is there, of the declared size, its bytes of the declared type).
 * Without a store (a NATS worker whose blob bucket is not set up) large parts are left for the size
 * check to refuse and a reference is refused. Refusals name the part and say what to do.
 */
export async function storeBlobParts(
  prompt: unknown,
  blobs: BlobStore | undefined,
  maxBlobBytes: number,
  mayUse: (sha256: string) => Promise<boolean> = async () => true,
): Promise<Prompt> {
  let checked: Prompt;
  try {
    checked = checkPromptShape(prompt);
  } catch (err) {
    throw invalid((err as Error).message);
  }
  if (typeof checked === 'string') return checked;
  if (!checked.some((p) => 'blob' in p || ('data' in p && base64Bytes(p.data) > INLINE_PART_BYTES))) return checked;
  const out: PromptPart[] = [];
  for (const [i, part] of checked.entries()) out.push(await storePart(part, i, blobs, maxBlobBytes, mayUse));
  return out;
}

async function storePart(
  part: PromptPart,
  i: number,
  blobs: BlobStore | undefined,
  maxBlobBytes: number,
  mayUse: (sha256: string) => Promise<boolean>,
): Promise<PromptPart> {
  const where = `prompt part ${i} (${part.type})`;
  if (part.type !== 'image' && part.type !== 'file') return part;
  if ('blob' in part) {
    if (!blobs) throw noStore(where, part.blob.sha256);
    // before the store is asked: whether a blob exists is no answer to give a caller who may not use it
    if (!(await mayUse(part.blob.sha256))) throw notYours(where, part.blob);
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

/**
 * A reference a client sent: one pass over the stored bytes, put again (stored once), checks their
 * hash, size and signature against the reference, and marks the blob as put now, so a delete or a
 * sweep before this admission's event is appended keeps it (src/blobs/sweep.ts).
 */
async function checkRef(where: string, ref: BlobRef, blobs: BlobStore, maxBlobBytes: number): Promise<void> {
  if (ref.size > maxBlobBytes) throw tooLarge(where, ref.size, maxBlobBytes);
  let stored: BlobRef;
  try {
    stored = await blobs.put(blobs.read(ref.sha256), { mediaType: ref.mediaType, expectedSha256: ref.sha256, maxBytes: maxBlobBytes });
  } catch (err) {
    if (isSessiondError(err, ErrorCode.NotFound)) {
      throw invalid(
        `${where} references blob ${ref.sha256}, which is not stored: store its bytes first (engine.blobs.put), or send them inline as { "data": "<base64>", "mediaType": "${ref.mediaType}" }`,
      );
    }
    if (isSessiondError(err)) throw new SessiondError(err.code, `Invalid input: ${where}: ${err.message}`, { cause: err, details: err.details });
    throw err;
  }
  if (stored.size !== ref.size) throw invalid(`${where} says blob ${ref.sha256} is ${ref.size} bytes, but it is ${stored.size}: give its real size`);
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

function notYours(where: string, ref: BlobRef): SessiondError {
  return invalid(
    `${where} references blob ${ref.sha256}, which is not stored or is not yours to use: upload its bytes first (the upload command, the client's uploadBlob, or POST /v1/blobs on the gateway) and admit within the hour, or send them inline as { "data": "<base64>", "mediaType": "${ref.mediaType}" }`,
  );
}

function noStore(where: string, sha256: string): SessiondError {
  return invalid(
    `${where} references blob ${sha256}, but this worker keeps no blob store (on NATS the operator makes the Object Store bucket SESSIOND_BLOBS with sessiond setup, then restarts the workers): send the bytes inline or by URL`,
  );
}
