/**
 * `GET /v1/sessions/:id/blobs/:sha256`: the bytes of a blob the session references, streamed in
 * chunks with its media type, for a token that reaches the session (the route checks that first);
 * 404 when the session does not reference it, the same answer as for a session out of reach.
 * Embedded: read from the engine's blob store; on NATS: through the `blob` command (SessiondClient).
 */
import type { ServerResponse } from 'node:http';
import { ErrorCode, HttpError, isSessiondError } from '../errors.ts';
import type { CommandTarget } from '../nats/command-service.ts';
import { readBlobChunk } from '../nats/blob-commands.ts';

type BlobStore = NonNullable<CommandTarget['blobs']>;
import type { CommandResults } from '../nats/command-protocol.ts';
import type { Sessions } from '../sessions/sessions.ts';

/** One chunk of a session's blob from `offset` (the `blob` command's reply); `seq`: the previous reply's. */
export type BlobChunkReader = (sessionId: string, sha256: string, offset: number, seq?: number) => Promise<CommandResults['blob']>;

/**
 * How the gateway reads blobs from what it serves: a client's `blobChunk`, or an engine's (or
 * host's) blob store; with a store, `rest` streams what follows the first chunk in one read (a
 * store read chunk by chunk may load the whole blob for each: SQLite does).
 */
export function blobReaderOf(sessions: Omit<Sessions, 'close'>): BlobReader | undefined {
  const s = sessions as { blobChunk?: BlobChunkReader; blobs?: BlobStore; engine?: { blobs?: BlobStore } };
  if (typeof s.blobChunk === 'function') return { chunk: (id, sha256, offset, seq) => s.blobChunk!(id, sha256, offset, seq) };
  const store = s.blobs ?? s.engine?.blobs;
  if (!store) return undefined;
  const chunk: BlobChunkReader = (sessionId, sha256, offset, seq) =>
    readBlobChunk({ sessionId, sha256, offset, ...(seq === undefined ? {} : { seq }) }, (id, page) => sessions.events(id, page), {
      store,
      maxBlobBytes: 0,
      tenant: undefined,
    });
  return { chunk, rest: (sha256, offset) => store.read(sha256, { offset }) };
}

export interface BlobReader {
  chunk: BlobChunkReader;
  /** The blob's bytes from `offset` to its end, once the first chunk has checked the reference. */
  rest?: (sha256: string, offset: number) => AsyncIterable<Uint8Array>;
}

/** Streams the blob to `res`; a missing reference is a 404 (before any byte is sent). */
export async function sendBlob(res: ServerResponse, reader: BlobReader | undefined, sessionId: string, sha256: string): Promise<void> {
  if (!/^[0-9a-f]{64}$/.test(sha256))
    throw new HttpError(400, ErrorCode.InvalidId, `Invalid blob hash ${JSON.stringify(sha256.slice(0, 80))}: 64 lower-case hex characters.`);
  if (!reader) throw new HttpError(404, ErrorCode.NotFound, `Blob ${sha256}: this gateway's sessions keep no blobs.`);
  let chunk: CommandResults['blob'];
  try {
    chunk = await reader.chunk(sessionId, sha256, 0);
  } catch (err) {
    if (isSessiondError(err, ErrorCode.NotFound))
      throw new HttpError(404, ErrorCode.NotFound, `Blob ${sha256} is not referenced by session ${sessionId}, or this token may not reach it.`);
    throw err;
  }
  res.writeHead(200, { 'content-type': chunk.mediaType, 'content-length': String(chunk.size), 'cache-control': 'private, max-age=31536000, immutable' });
  const write = async (bytes: Uint8Array) => {
    if (!res.write(bytes)) await new Promise<void>((r) => res.once('drain', r));
  };
  for (;;) {
    const bytes = Buffer.from(chunk.data, 'base64');
    await write(bytes);
    if (!chunk.more || bytes.length === 0 || res.destroyed) break;
    if (reader.rest) {
      for await (const piece of reader.rest(sha256, chunk.offset + bytes.length)) {
        if (res.destroyed) break;
        await write(piece);
      }
      break;
    }
    chunk = await reader.chunk(sessionId, sha256, chunk.offset + bytes.length, chunk.seq);
  }
  res.end();
}
