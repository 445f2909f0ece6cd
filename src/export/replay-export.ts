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
import { readExport, type ExportHeader } from './export-file.ts';
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
};

export async function replayExport(db: Db, file: string, options: ReplayOptions = {}): Promise<ReplayResult> {
  const head = db.prepare('SELECT COALESCE(MAX(position), 0) FROM event').pluck().get() as number;
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
  const { header } = await readExport(file, {
    onHeader: (h) => {
      resetProjection(db); // the projection covers this log only, as after a rebuild
      options.onHeader?.(h);
    },
    onEvents: (events) => {
      read += events.length;
      const kept = events.filter(keep);
      if (kept.length === 0) return;
      position = commit.immediate(kept).position;
      imported += kept.length;
    },
    onProgress: (bytes, totalBytes) => options.onProgress?.({ bytes, totalBytes, read, imported, position }),
    ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
  });
  return { header, read, imported, position, withheld: [...withheld.values()] };
}
