/**
 * Replays an export file into a fresh database in one pass, a transaction per batch, so a replay that
 * stops leaves a consistent prefix. Damage throws `CorruptExportError`; sessions whose decisions do
 * not hold stop early (`withheld`; why: docs/operating.md#exports-are-evidence-not-authority).
 */
import { ErrorCode, SessiondError } from '../errors.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { Projector } from '../projector/projector.ts';
import { resetProjection } from '../projector/rebuild.ts';
import { eventImporter } from '../storage/sqlite/import-events.ts';
import type { Db } from '../storage/sqlite/database.ts';
import { storedEvents } from '../storage/sqlite/event-rows.ts';
import { readExport, type ExportBlobChunk, type ExportHeader } from './export-file.ts';
import { blobRefsOf } from '../events/blob-refs.ts';
import { withheldSessions, type Withheld } from './evidence.ts';
import type { UrlOptions } from '../input/url-guard.ts';

export interface ReplayOptions {
  /** Which events to replay (default: all); a session's kept events must still be gapless from seq 1. */
  keep?: (event: SessionEvent) => boolean;
  onHeader?: (header: ExportHeader) => void;
  /** After each committed batch. */
  onProgress?: (progress: ReplayProgress) => void;
  /** Events read from the file per transaction (default 1000). */
  batchSize?: number;
  /** Projector (checkpoint) name, default 'main'. */
  name?: string;
  /** Which URLs the replayed prompts may name, as an admission's (default: https to public hosts). */
  urls?: UrlOptions;
  /**
   * Stores a blob the file carries, whole (the target's blob store, checking the bytes against the
   * hash: a mismatch throws and stops the replay). Without it the file's blobs are skipped.
   */
  putBlob?: (ref: { sha256: string; size: number; mediaType: string }, bytes: Uint8Array) => Promise<void>;
}

export interface ReplayProgress {
  /** Bytes of the file read into whole frames, and the file's size. */
  bytes: number;
  totalBytes: number;
  /** Events read from the file, and those kept and committed. */
  read: number;
  imported: number;
  /** The log position (and projector checkpoint) reached. */
  position: number;
}

export type ReplayResult = Omit<ReplayProgress, 'bytes' | 'totalBytes'> & {
  header: ExportHeader;
  /** Sessions replayed only up to the event before an issue with their decisions (evidence.ts). */
  withheld: Withheld[];
  /** Blobs restored from the file. */
  blobs: number;
  /** Blobs the replayed events reference that the file does not carry (an export of events only). */
  missingBlobs: string[];
};

export async function replayExport(db: Db, file: string, options: ReplayOptions = {}): Promise<ReplayResult> {
  const head = storedEvents(db).head();
  if (head > 0) {
    throw new SessiondError(ErrorCode.InvalidOption, `${db.name} already holds an event log (up to position ${head}): replay into a fresh database file.`);
  }
  const projector = new Projector(db, options.name === undefined ? {} : { name: options.name });
  const importEvents = eventImporter(db);
  const commit = db.transaction((events: readonly SessionEvent[]) => projector.apply(importEvents(events)));
  const withheld = await withheldSessions(file, options.urls);
  const given = options.keep;
  const keep = (e: SessionEvent) => (withheld.get(e.sessionId)?.seq ?? Number.POSITIVE_INFINITY) > e.seq && (given === undefined || given(e));
  let read = 0;
  let imported = 0;
  let position = 0;
  const referenced = new Set<string>();
  const restored = new Set<string>();
  const pieces = new Map<string, { parts: Uint8Array[]; got: number }>();
  const onBlobChunk = async (c: ExportBlobChunk) => {
    // only the blobs the replayed events reference (the events come first in the file)
    if (!options.putBlob || restored.has(c.sha256) || !referenced.has(c.sha256)) return;
    const p = pieces.get(c.sha256) ?? { parts: [], got: 0 };
    if (c.offset !== p.got) {
      throw new SessiondError(
        ErrorCode.DecodeFailed,
        `${file}: blob ${c.sha256} has a piece at byte ${c.offset}, but ${p.got} bytes came before it: the file was cut or reordered; export it again.`,
      );
    }
    p.parts.push(c.data);
    p.got += c.data.length;
    pieces.set(c.sha256, p);
    if (p.got < c.size) return;
    pieces.delete(c.sha256);
    await options.putBlob({ sha256: c.sha256, size: c.size, mediaType: c.mediaType }, Buffer.concat(p.parts));
    restored.add(c.sha256);
  };
  const { header } = await readExport(file, {
    onHeader: (h) => {
      resetProjection(db); // the projection covers this log only, as after a rebuild
      options.onHeader?.(h);
    },
    onEvents: (events) => {
      read += events.length;
      const kept = events.filter(keep);
      if (kept.length === 0) return;
      for (const e of kept) for (const ref of blobRefsOf(e)) referenced.add(ref.sha256);
      position = commit.immediate(kept).position;
      imported += kept.length;
    },
    onProgress: (bytes, totalBytes) => options.onProgress?.({ bytes, totalBytes, read, imported, position }),
    ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
    onBlobChunk,
  });
  const missingBlobs = [...referenced].filter((sha) => !restored.has(sha)).sort();
  return { header, read, imported, position, withheld: [...withheld.values()], blobs: restored.size, missingBlobs };
}
