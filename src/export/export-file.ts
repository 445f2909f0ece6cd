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
export const EXPORT_VERSION = 1;
const MAX_FRAME_BYTES = 16 * 1024 * 1024;

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
  private constructor(private readonly fh: FileHandle) {}

  static async create(file: string, header: Omit<ExportHeader, 'format' | 'version'>): Promise<ExportWriter> {
    const fh = await open(file, 'w');
    const w = new ExportWriter(fh);
    await w.frame(pack({ format: EXPORT_FORMAT, version: EXPORT_VERSION, ...header }));
    return w;
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
    if (header.version !== EXPORT_VERSION) {
      throw new SessiondError(
        ErrorCode.UnsupportedEventVersion,
        `${file} is export format version ${header.version}; this sessiond reads version ${EXPORT_VERSION}. Use the sessiond that wrote it.`,
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
