/**
 * Blobs through the commands (the blob bucket is the workers' only): `uploadBlob` sends bytes in
 * chunks with the `upload` command and returns the reference a prompt part carries; `readBlobChunks`
 * reads a blob a session references with the `blob` command, checked against its hash at the end.
 * Protocol: docs/protocol.md ("upload", "blob").
 */
import { createHash } from 'node:crypto';
import { CorruptDataError, ErrorCode, InvalidInputError } from '../errors.ts';
import type { Prompt, PromptPart } from '../events/catalog.ts';
import { INLINE_PART_BYTES, base64Bytes } from '../events/prompt.ts';
import { MAX_UPLOAD_CHUNK_BYTES, type BlobReference as BlobRef, type CommandRequests, type CommandResults } from '../nats/command-protocol.ts';

type Send = <V extends 'upload' | 'blob'>(verb: V, body: CommandRequests[V]) => Promise<CommandResults[V]>;

export interface UploadOptions {
  /** What the bytes are (`image/png`): checked by the worker against their signature. */
  mediaType: string;
  /** The whole blob's size when known ahead (bytes given whole: always): one over the workers' limit is refused at the first chunk. */
  size?: number;
  /**
   * Who will reference the blob in admissions (a trusted caller admitting for an owner, as the
   * gateway does): the upload lets that owner use it for an hour. A tenant's uploads are its own.
   */
  owner?: string;
}

/** The bytes of an upload: whole, or chunks of any size (a file stream), re-cut to `MAX_UPLOAD_CHUNK_BYTES`. */
export type UploadSource = Uint8Array | AsyncIterable<Uint8Array> | Iterable<Uint8Array>;

/** Uploads `source` as one blob under `uploadId` and returns its reference. */
export async function uploadBlob(send: Send, uploadId: string, source: UploadSource, options: UploadOptions): Promise<BlobRef> {
  if (options === null || typeof options !== 'object' || typeof options.mediaType !== 'string') {
    throw new InvalidInputError('uploadBlob needs { mediaType }, e.g. { mediaType: "image/png" }.');
  }
  const size = source instanceof Uint8Array ? source.length : options.size;
  const hash = createHash('sha256');
  let offset = 0;
  let held: Uint8Array | undefined; // the chunk read ahead: the last one is sent with the hash
  const flush = async (chunk: Uint8Array, last: boolean): Promise<CommandResults['upload']> => {
    const body: CommandRequests['upload'] = {
      uploadId,
      offset,
      data: Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length).toString('base64'),
      mediaType: options.mediaType,
      ...(last ? { size: offset + chunk.length, sha256: hash.digest('hex') } : size !== undefined ? { size } : {}),
      ...(last && options.owner !== undefined ? { owner: options.owner } : {}),
    };
    const reply = await send('upload', body);
    offset += chunk.length;
    return reply;
  };
  for await (const chunk of recut(source)) {
    hash.update(chunk);
    if (held) await flush(held, false);
    held = chunk;
  }
  const reply = await flush(held ?? new Uint8Array(0), true);
  if (!reply.blob) throw new Error(`The worker did not answer the last chunk of upload ${uploadId} with a reference.`);
  return reply.blob;
}

/** The source in chunks of exactly `MAX_UPLOAD_CHUNK_BYTES` (the last shorter). */
async function* recut(source: UploadSource): AsyncIterable<Uint8Array> {
  if (source instanceof Uint8Array) {
    for (let at = 0; at < source.length; at += MAX_UPLOAD_CHUNK_BYTES) yield source.subarray(at, at + MAX_UPLOAD_CHUNK_BYTES);
    return;
  }
  if (source === null || typeof source !== 'object' || (!(Symbol.asyncIterator in source) && !(Symbol.iterator in source))) {
    throw new InvalidInputError('uploadBlob takes bytes (Uint8Array) or an iterable of byte chunks (a file stream).');
  }
  let buffer = Buffer.alloc(0);
  for await (const chunk of source as AsyncIterable<Uint8Array>) {
    if (!(chunk instanceof Uint8Array)) throw new InvalidInputError(`uploadBlob's chunks must be bytes (Uint8Array), got ${typeof chunk}.`);
    buffer = buffer.length === 0 ? Buffer.from(chunk) : Buffer.concat([buffer, chunk]);
    while (buffer.length >= MAX_UPLOAD_CHUNK_BYTES) {
      yield buffer.subarray(0, MAX_UPLOAD_CHUNK_BYTES);
      buffer = buffer.subarray(MAX_UPLOAD_CHUNK_BYTES);
    }
  }
  if (buffer.length > 0) yield buffer;
}

function checkSha256(sha256: unknown): string {
  if (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(sha256)) {
    throw new InvalidInputError(`Invalid blob hash ${JSON.stringify(sha256)}: give the reference's sha256, 64 lower-case hex characters.`, {
      code: ErrorCode.InvalidId,
    });
  }
  return sha256;
}

/** The blob's bytes in chunks, read from the session that references it; the hash is checked after the last. */
export async function* readBlobChunks(send: Send, sessionId: string, blob: string | Pick<BlobRef, 'sha256'>): AsyncIterable<Uint8Array> {
  const sha256 = checkSha256(typeof blob === 'string' ? blob : blob?.sha256);
  const hash = createHash('sha256');
  let offset = 0;
  let seq: number | undefined; // where the first reply found the reference: the next requests read that event only
  for (;;) {
    const reply = await send('blob', { sessionId, sha256, ...(offset > 0 ? { offset } : {}), ...(seq === undefined ? {} : { seq }) });
    seq = reply.seq;
    const bytes = Buffer.from(reply.data, 'base64');
    hash.update(bytes);
    offset += bytes.length;
    if (bytes.length > 0) yield new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
    if (!reply.more) break;
    if (bytes.length === 0) throw new Error(`The worker answered an empty chunk of blob ${sha256} at offset ${offset} with more to come.`);
  }
  const actual = hash.digest('hex');
  if (actual !== sha256) {
    throw new CorruptDataError(`Blob ${sha256} read from session ${sessionId} hashes to ${actual}: read it again.`, { details: { sha256, actual } });
  }
}

/** The blob's bytes whole (see `readBlobChunks`). */
export async function readBlob(send: Send, sessionId: string, blob: string | Pick<BlobRef, 'sha256'>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of readBlobChunks(send, sessionId, blob)) chunks.push(chunk);
  return new Uint8Array(Buffer.concat(chunks));
}

/**
 * The prompt with each inline image or file part over `INLINE_PART_BYTES` uploaded first and
 * replaced by its reference (what a worker would otherwise refuse: an admit request is one NATS
 * message). Other parts, and a prompt with none that large, are left as they are.
 */
export async function uploadLargeParts(prompt: Prompt, upload: (bytes: Uint8Array, mediaType: string) => Promise<BlobRef>): Promise<Prompt> {
  if (typeof prompt === 'string' || !Array.isArray(prompt) || !prompt.some(isLargeInline)) return prompt;
  const out: PromptPart[] = [];
  for (const part of prompt) {
    if (!isLargeInline(part)) {
      out.push(part);
      continue;
    }
    const blob = await upload(Buffer.from(part.data, 'base64'), part.mediaType);
    out.push(part.type === 'image' ? { type: 'image', blob } : { type: 'file', blob, ...(part.filename ? { filename: part.filename } : {}) });
  }
  return out;
}

type InlinePart = Extract<PromptPart, { data: string }>;
const isLargeInline = (part: PromptPart): part is InlinePart =>
  part !== null &&
  typeof part === 'object' &&
  (part.type === 'image' || part.type === 'file') &&
  'data' in part &&
  typeof part.data === 'string' &&
  typeof part.mediaType === 'string' &&
  base64Bytes(part.data) > INLINE_PART_BYTES;
