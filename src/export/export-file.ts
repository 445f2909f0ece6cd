/**
 * The portable export format: a file of msgpack frames, each prefixed by its length (4 bytes,
 * big-endian). The first frame is a header `{ format: 'sessiond-export', version: 1, created,
 * source, events }`; every other frame is one event as `encodeEvent` writes it (a plain map).
 *
 * Reading is streaming and strict: a frame that is truncated, undecodable or fails its schema stops
 * the read with an error naming the byte offset and frame number; every frame before it has already
 * been handed to the caller, so nothing before the damage is lost.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { ErrorCode, SessiondError, messageOf } from '../errors.ts';
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

export class CorruptExportError extends SessiondError {
  constructor(readonly file: string, readonly offset: number, readonly frame: number, why: string, cause?: unknown) {
    super(ErrorCode.DecodeFailed, `${file} is damaged at byte ${offset} (frame ${frame}): ${why}. The ${Math.max(0, frame - 1)} events before it were read.`, { cause, details: { file, offset, frame } });
    this.name = 'CorruptExportError';
  }
}

/**
 * Reads an export file: the header, then events in batches handed to `onEvents` as they are read.
 * `onProgress(bytesRead, totalBytes)` for progress bars.
 */
export async function readExport(file: string, handlers: {
  onHeader?: (h: ExportHeader) => void | Promise<void>;
  onEvents: (events: SessionEvent[]) => void | Promise<void>;
  onProgress?: (bytes: number, total: number) => void;
  batchSize?: number;
}): Promise<{ header: ExportHeader; events: number }> {
  const fh = await open(file, 'r');
  try {
    const total = (await fh.stat()).size;
    let offset = 0;
    let frame = 0;
    const readExact = async (n: number, what: string): Promise<Buffer> => {
      const buf = Buffer.alloc(n);
      const { bytesRead } = await fh.read(buf, 0, n, offset);
      if (bytesRead < n) throw new CorruptExportError(file, offset, frame, `truncated ${what} (${bytesRead} of ${n} bytes)`);
      offset += n;
      return buf;
    };
    const next = async (): Promise<Buffer | undefined> => {
      if (offset >= total) return undefined;
      const start = offset;
      const len = (await readExact(4, 'frame length')).readUInt32BE(0);
      if (len === 0 || len > MAX_FRAME_BYTES) throw new CorruptExportError(file, start, frame, `impossible frame length ${len}`);
      return readExact(len, 'frame');
    };
    const headerBytes = await next();
    if (!headerBytes) throw new CorruptExportError(file, 0, 0, 'the file is empty');
    let header: ExportHeader;
    try {
      header = unpack(headerBytes) as ExportHeader;
    } catch (err) {
      throw new CorruptExportError(file, 0, 0, `unreadable header (${messageOf(err)})`, err);
    }
    if (header?.format !== EXPORT_FORMAT) throw new CorruptExportError(file, 0, 0, 'not a sessiond export (bad header)');
    if (header.version !== EXPORT_VERSION) {
      throw new SessiondError(ErrorCode.UnsupportedEventVersion, `${file} is export format version ${header.version}; this sessiond reads version ${EXPORT_VERSION}. Use the sessiond that wrote it.`);
    }
    await handlers.onHeader?.(header);
    const batchSize = handlers.batchSize ?? 1000;
    let batch: SessionEvent[] = [];
    let count = 0;
    for (;;) {
      frame++;
      const start = offset;
      let body: Buffer | undefined;
      try {
        body = await next();
      } catch (err) {
        if (batch.length) await handlers.onEvents(batch); // keep everything before the damage
        throw err;
      }
      if (!body) break;
      let event: SessionEvent;
      try {
        event = decodeEvent(body);
      } catch (err) {
        if (batch.length) await handlers.onEvents(batch);
        throw new CorruptExportError(file, start, frame, messageOf(err), err);
      }
      batch.push(event);
      count++;
      if (batch.length >= batchSize) {
        await handlers.onEvents(batch);
        batch = [];
        handlers.onProgress?.(offset, total);
      }
    }
    if (batch.length) await handlers.onEvents(batch);
    handlers.onProgress?.(offset, total);
    return { header, events: count };
  } finally {
    await fh.close();
  }
}
