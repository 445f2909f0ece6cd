/**
 * The portable export format: length-prefixed msgpack frames, a header then one event per frame,
 * read streaming and strictly (damage stops the read naming offset and frame, after everything
 * before it). The format: docs/protocol.md#the-export-file.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { CorruptExportError, ErrorCode, SessiondError, messageOf } from '../errors.ts';
import { decodeEvent, encodeEvent, pack, unpack } from '../events/codec.ts';
import type { SessionEvent } from '../events/envelope.ts';

export const EXPORT_FORMAT = 'sessiond-export';
/** The version of a file of events only; one that also carries blobs is `EXPORT_BLOBS_VERSION`. */
export const EXPORT_VERSION = 1;
/** A file whose events are followed by the bytes of the blobs they reference (blob frames). */
export const EXPORT_BLOBS_VERSION = 2;
const MAX_FRAME_BYTES = 16 * 1024 * 1024;
/** The first byte of a blob frame: 0xc1, which msgpack never uses, so no event frame starts with it. */
const BLOB_FRAME = 0xc1;
/** Bytes of a blob per blob frame. */
export const EXPORT_BLOB_CHUNK_BYTES = 1024 * 1024;

/** A piece of a blob in an export: its reference, where the piece starts in it, and the piece. */
export interface ExportBlobChunk {
  sha256: string;
  size: number;
  mediaType: string;
  offset: number;
  data: Uint8Array;
}

export interface ExportHeader {
  format: typeof EXPORT_FORMAT;
  version: number;
  created: number;
  source: string;
  /** Number of event frames that follow (when known at write time). */
  events: number;
}

export class ExportWriter {
  private position = 0;
  private count = 0;
  private blobs = 0;
  private constructor(
    private readonly fh: FileHandle,
    private readonly header: ExportHeader,
  ) {}

  static async create(file: string, header: Omit<ExportHeader, 'format' | 'version'>): Promise<ExportWriter> {
    const fh = await open(file, 'w');
    const full: ExportHeader = { format: EXPORT_FORMAT, version: EXPORT_VERSION, ...header };
    const w = new ExportWriter(fh, full);
    await w.frame(pack(full));
    return w;
  }

  /**
   * Writes a blob's bytes (after the events that reference it) as frames of
   * `EXPORT_BLOB_CHUNK_BYTES`; the file becomes version `EXPORT_BLOBS_VERSION` on close.
   */
  async writeBlob(ref: { sha256: string; size: number; mediaType: string }, chunks: AsyncIterable<Uint8Array>): Promise<void> {
    let offset = 0;
    for await (const chunk of chunks) {
      for (let at = 0; at < chunk.length; at += EXPORT_BLOB_CHUNK_BYTES) {
        const data = chunk.subarray(at, at + EXPORT_BLOB_CHUNK_BYTES);
        const body = pack({ sha256: ref.sha256, size: ref.size, mediaType: ref.mediaType, offset, data });
        await this.frame(Buffer.concat([Uint8Array.of(BLOB_FRAME), body]));
        offset += data.length;
      }
    }
    this.blobs++;
  }

  /** Blobs written. */
  get blobsWritten(): number {
    return this.blobs;
  }

  async write(events: SessionEvent[]): Promise<void> {
    const parts: Uint8Array[] = [];
    for (const e of events) {
      const body = encodeEvent(e);
      const len = Buffer.alloc(4);
      len.writeUInt32BE(body.byteLength);
      parts.push(len, body);
      this.count++;
    }
    const buf = Buffer.concat(parts);
    await this.fh.write(buf, 0, buf.byteLength, this.position);
    this.position += buf.byteLength;
  }

  get written(): number {
    return this.count;
  }

  async close(): Promise<void> {
    if (this.blobs > 0) {
      // the header again, now version 2: the same length (both versions are one msgpack byte)
      const body = pack({ ...this.header, version: EXPORT_BLOBS_VERSION });
      const len = Buffer.alloc(4);
      len.writeUInt32BE(body.byteLength);
      const before = pack(this.header).byteLength;
      if (body.byteLength !== before) throw new Error(`export header changed length (${before} -> ${body.byteLength})`);
      await this.fh.write(Buffer.concat([len, body]), 0, 4 + body.byteLength, 0);
    }
    await this.fh.close();
  }

  private async frame(body: Uint8Array): Promise<void> {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(body.byteLength);
    const buf = Buffer.concat([len, body]);
    await this.fh.write(buf, 0, buf.byteLength, this.position);
    this.position += buf.byteLength;
  }
}

/** How much of an export file one read asks for: frames are sliced from these chunks. */
export const EXPORT_READ_CHUNK_BYTES = 1 << 20;

/**
 * The frames of an export file, read `EXPORT_READ_CHUNK_BYTES` at a time (more when one frame is
 * larger). A frame is a view into its chunk, and decoded events may keep views into it (binary
 * values), so a chunk is never written again: each read fills a new buffer, starting with the unread
 * tail of the previous one.
 */
class FrameReader {
  private buf = Buffer.alloc(0);
  /** The next unread byte of `buf`, and the end of what `buf` holds. */
  private at = 0;
  private end = 0;
  /** The file offset just past `buf`'s content. */
  private filled = 0;

  constructor(
    private readonly fh: FileHandle,
    private readonly file: string,
    readonly size: number,
  ) {}

  /** The file offset of the next unread byte. */
  get offset(): number {
    return this.filled - (this.end - this.at);
  }

  /** The next frame's body, or undefined at the end of the file; `frame` numbers the errors. */
  async next(frame: number): Promise<Buffer | undefined> {
    const start = this.offset;
    if (start >= this.size) return undefined;
    const head = await this.available(4);
    if (head < 4) throw new CorruptExportError(this.file, start, frame, `truncated frame length (${head} of 4 bytes)`);
    const len = this.buf.readUInt32BE(this.at);
    if (len === 0 || len > MAX_FRAME_BYTES) throw new CorruptExportError(this.file, start, frame, `impossible frame length ${len}`);
    this.at += 4;
    const got = await this.available(len);
    if (got < len) throw new CorruptExportError(this.file, start + 4, frame, `truncated frame (${got} of ${len} bytes)`);
    const body = this.buf.subarray(this.at, this.at + len);
    this.at += len;
    return body;
  }

  /** Makes up to `n` unread bytes available in `buf` (fewer only at the end of the file); returns how many are. */
  private async available(n: number): Promise<number> {
    if (this.end - this.at < n && this.filled < this.size) await this.read(n);
    return Math.min(n, this.end - this.at);
  }

  private async read(n: number): Promise<void> {
    const tail = this.end - this.at;
    const next = Buffer.allocUnsafe(Math.min(Math.max(EXPORT_READ_CHUNK_BYTES, n), tail + this.size - this.filled));
    this.buf.copy(next, 0, this.at, this.end);
    this.buf = next;
    this.at = 0;
    this.end = tail;
    while (this.end < next.length) {
      const { bytesRead } = await this.fh.read(next, this.end, next.length - this.end, this.filled);
      if (bytesRead === 0) break; // the file shrank since it was opened
      this.end += bytesRead;
      this.filled += bytesRead;
    }
  }
}

/**
 * Reads an export file: the header, then events in batches handed to `onEvents` as they are read.
 * `onProgress(bytes, totalBytes)` after each batch (bytes = the whole frames read so far), for
 * progress bars. A damaged frame throws `CorruptExportError` after the events before it were handed over
 * (with `onUndecodable`, a whole frame that does not decode is handed there instead; truncation still throws).
 */
export async function readExport(
  file: string,
  handlers: {
    onHeader?: (h: ExportHeader) => void | Promise<void>;
    onEvents: (events: SessionEvent[]) => void | Promise<void>;
    onProgress?: (bytes: number, total: number) => void;
    batchSize?: number;
    /** A frame read whole that does not decode: handed here and skipped (the read goes on) instead of stopping the read. */
    onUndecodable?: (damage: CorruptExportError, body: Uint8Array) => void;
    /** A piece of a blob (a version 2 file, after the events); without it blob frames are skipped. */
    onBlobChunk?: (chunk: ExportBlobChunk) => void | Promise<void>;
  },
): Promise<{ header: ExportHeader; events: number }> {
  const fh = await open(file, 'r');
  try {
    const frames = new FrameReader(fh, file, (await fh.stat()).size);
    const headerBytes = await frames.next(0);
    if (!headerBytes) throw new CorruptExportError(file, 0, 0, 'the file is empty');
    let header: ExportHeader;
    try {
      header = unpack(headerBytes) as ExportHeader;
    } catch (err) {
      throw new CorruptExportError(file, 0, 0, `unreadable header (${messageOf(err)})`, err);
    }
    if (header?.format !== EXPORT_FORMAT) throw new CorruptExportError(file, 0, 0, 'not a sessiond export (bad header)');
    if (header.version !== EXPORT_VERSION && header.version !== EXPORT_BLOBS_VERSION) {
      throw new SessiondError(
        ErrorCode.UnsupportedEventVersion,
        `${file} is export format version ${header.version}; this sessiond reads versions ${EXPORT_VERSION} and ${EXPORT_BLOBS_VERSION}. Use the sessiond that wrote it.`,
      );
    }
    await handlers.onHeader?.(header);
    const batchSize = handlers.batchSize ?? 1000;
    let batch: SessionEvent[] = [];
    let count = 0;
    let frame = 0;
    /** Hands the batch over; `bytes` = where its last frame ends. */
    const deliver = async (bytes: number): Promise<void> => {
      await handlers.onEvents(batch);
      batch = [];
      handlers.onProgress?.(bytes, frames.size);
    };
    for (;;) {
      frame++;
      const start = frames.offset;
      let event: SessionEvent;
      try {
        const body = await frames.next(frame);
        if (!body) break;
        if (body[0] === BLOB_FRAME && header.version === EXPORT_BLOBS_VERSION) {
          const chunk = blobChunk(body, file, start, frame);
          if (batch.length) await deliver(start); // the events before it first
          await handlers.onBlobChunk?.(chunk);
          continue;
        }
        try {
          event = decodeEvent(body);
        } catch (err) {
          const damage = new CorruptExportError(file, start, frame, messageOf(err), err);
          if (!handlers.onUndecodable) throw damage;
          handlers.onUndecodable(damage, body);
          continue;
        }
      } catch (err) {
        if (batch.length) await deliver(start); // keep everything before the damage
        throw err;
      }
      batch.push(event);
      count++;
      if (batch.length >= batchSize) await deliver(frames.offset);
    }
    if (batch.length) await deliver(frames.offset);
    else handlers.onProgress?.(frames.offset, frames.size);
    return { header, events: count };
  } finally {
    await fh.close();
  }
}

/** A blob frame's piece, checked field by field (damage names the frame). */
function blobChunk(body: Buffer, file: string, start: number, frame: number): ExportBlobChunk {
  let raw: Partial<ExportBlobChunk>;
  try {
    raw = unpack(body.subarray(1)) as Partial<ExportBlobChunk>;
  } catch (err) {
    throw new CorruptExportError(file, start, frame, `unreadable blob frame (${messageOf(err)})`, err);
  }
  const ok =
    raw !== null &&
    typeof raw === 'object' &&
    typeof raw.sha256 === 'string' &&
    /^[0-9a-f]{64}$/.test(raw.sha256) &&
    Number.isSafeInteger(raw.size) &&
    typeof raw.mediaType === 'string' &&
    Number.isSafeInteger(raw.offset) &&
    raw.data instanceof Uint8Array &&
    raw.offset! >= 0 &&
    raw.offset! + raw.data.length <= raw.size!;
  if (!ok) throw new CorruptExportError(file, start, frame, 'a blob frame without a valid sha256, size, mediaType, offset and data');
  return raw as ExportBlobChunk;
}
