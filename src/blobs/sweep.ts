/**
 * Nothing left behind: which stored blobs may go, and removing them. A blob no session references
 * (a session deleted, an admission that died between its blob and its event) is removed once its
 * content was last put more than `graceMs` ago, through `BlobStore.deleteIfIdle`, so an admission
 * that re-uses the content meanwhile (its put makes the blob young again) cannot lose it. Used by
 * the worker's periodic sweep, `sessiond blobs sweep`, a delete (for the deleted session's blobs)
 * and `sessiond check` (which only reports). Why: docs/architecture.md ("Blobs: nothing left behind").
 */
import { ErrorCode, SessiondError, messageOf } from '../errors.ts';
import type { BlobStore, StoredBlob } from './blob-store.ts';
import { GRANT_PREFIX, STAGED_CHUNK_GRACE_MS } from './blob-staging.ts';

/** An unreferenced blob younger than this is kept (an admission may be about to append its event): 1 hour. */
export const DEFAULT_BLOB_GRACE_MS = 60 * 60 * 1000;
/** How often a worker sweeps unreferenced blobs: every 10 minutes. */
export const DEFAULT_BLOB_SWEEP_INTERVAL_MS = 10 * 60 * 1000;

/** Which blobs sessions reference (the projection's `session_blob` rows, src/projector/blob-rows.ts). */
export interface BlobReferences {
  referenced(sha256: string): boolean | Promise<boolean>;
}

export type BlobVerdict = 'referenced' | 'young' | 'orphaned';

/** What a sweep does with one stored blob. Pure. */
export function blobVerdict(blob: StoredBlob, referenced: boolean, now: number, graceMs: number): BlobVerdict {
  if (referenced) return 'referenced';
  // as `deleteIfIdle(sha256, now - graceMs)` decides: put before the cut is idle
  return blob.storedAt < now - graceMs ? 'orphaned' : 'young';
}

/** Checks a grace period option; returns it or the default. */
export function checkGraceMs(value: unknown, what = 'blob grace period'): number {
  if (value === undefined) return DEFAULT_BLOB_GRACE_MS;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new SessiondError(
      ErrorCode.InvalidOption,
      `Invalid ${what} ${JSON.stringify(value)}: give a whole number of milliseconds, 0 or more (default ${DEFAULT_BLOB_GRACE_MS}, one hour).`,
    );
  }
  return value;
}

export interface BlobSweepOptions {
  store: BlobStore;
  references: BlobReferences;
  now: number;
  graceMs?: number;
  /** Only report what would be removed (what `sessiond check` does). */
  dryRun?: boolean;
}

export interface BlobSweepReport {
  /** Blobs looked at. */
  checked: number;
  /** Referenced by a session: kept. */
  referenced: number;
  /** Unreferenced but put within the grace period: kept for now (a later sweep removes them). */
  young: StoredBlob[];
  /** Unreferenced and older than the grace period: removed (or, on a dry run, to be removed). */
  orphaned: StoredBlob[];
  /** Orphans kept after all: put again between the listing and the removal. */
  reused: number;
  /** Removals that failed (the next sweep tries again). */
  errors: { sha256: string; message: string }[];
  /** Chunks of uploads abandoned more than `STAGED_CHUNK_GRACE_MS` ago (blob-staging.ts): removed (on a dry run, to be removed). */
  abandonedChunks: number;
  /** Upload grants (blob-grants.ts) over `STAGED_CHUNK_GRACE_MS` old: removed (on a dry run, to be removed). */
  expiredGrants: number;
  graceMs: number;
}

/** One sweep: every stored blob, removing the unreferenced ones past the grace. */
export async function sweepBlobs(options: BlobSweepOptions): Promise<BlobSweepReport> {
  const graceMs = checkGraceMs(options.graceMs);
  const report: BlobSweepReport = { checked: 0, referenced: 0, young: [], orphaned: [], reused: 0, errors: [], abandonedChunks: 0, expiredGrants: 0, graceMs };
  const cut = options.now - graceMs;
  for await (const blob of options.store.list()) {
    report.checked++;
    const verdict = blobVerdict(blob, await options.references.referenced(blob.sha256), options.now, graceMs);
    if (verdict === 'referenced') report.referenced++;
    else if (verdict === 'young') report.young.push(blob);
    else if (verdict === 'orphaned') {
      if (options.dryRun) {
        report.orphaned.push(blob);
        continue;
      }
      try {
        // one step against a concurrent put: a blob put again since the listing is kept
        if (await options.store.deleteIfIdle(blob.sha256, cut)) report.orphaned.push(blob);
        else report.reused++;
      } catch (err) {
        report.errors.push({ sha256: blob.sha256, message: messageOf(err) });
      }
    }
  }
  const staging = options.store.staging;
  if (staging) {
    for await (const chunk of staging.listStaged()) {
      if (chunk.storedAt >= options.now - STAGED_CHUNK_GRACE_MS) continue;
      try {
        if (!options.dryRun && !(await staging.unstage(chunk.name))) continue;
        if (chunk.name.startsWith(GRANT_PREFIX)) report.expiredGrants++;
        else report.abandonedChunks++;
      } catch (err) {
        report.errors.push({ sha256: chunk.name, message: messageOf(err) });
      }
    }
  }
  return report;
}

export interface ReclaimReport {
  /** Removed: no session references them, and they were last put before the grace period. */
  removed: string[];
  /** Still referenced by another session (a fork, a session that sent the same bytes). */
  shared: string[];
  /** Unreferenced but put within the grace period (or not stored): left to the sweep. */
  left: string[];
}

/**
 * After a delete: removes those of the deleted session's blobs no other session references and
 * that were last put before the grace period; the rest is shared, or left to a later sweep.
 */
export async function reclaimBlobs(options: {
  store: BlobStore;
  references: BlobReferences;
  hashes: Iterable<string>;
  now: number;
  graceMs?: number;
}): Promise<ReclaimReport> {
  const cut = options.now - checkGraceMs(options.graceMs);
  const out: ReclaimReport = { removed: [], shared: [], left: [] };
  for (const sha256 of new Set(options.hashes)) {
    if (await options.references.referenced(sha256)) out.shared.push(sha256);
    else if (await options.store.deleteIfIdle(sha256, cut)) out.removed.push(sha256);
    else out.left.push(sha256);
  }
  return out;
}

/** The report in plain words, one line (what the CLI and the worker's notice print). */
export function describeBlobSweep(r: BlobSweepReport, dryRun = false): string {
  const bytes = r.orphaned.reduce((n, b) => n + b.size, 0);
  const removed = dryRun
    ? `${r.orphaned.length} unreferenced blob${r.orphaned.length === 1 ? '' : 's'} (${bytes} bytes) older than the grace period would be removed`
    : `removed ${r.orphaned.length} unreferenced blob${r.orphaned.length === 1 ? '' : 's'} (${bytes} bytes)`;
  const parts = [
    `checked ${r.checked} blob${r.checked === 1 ? '' : 's'}: ${r.referenced} referenced`,
    removed,
    `${r.young.length} unreferenced but put within the last ${Math.round(r.graceMs / 1000)} s kept for now`,
  ];
  if (r.reused > 0) parts.push(`${r.reused} put again meanwhile kept`);
  if (r.abandonedChunks > 0)
    parts.push(
      `${dryRun ? 'would remove' : 'removed'} ${r.abandonedChunks} chunk${r.abandonedChunks === 1 ? '' : 's'} of uploads abandoned over ${Math.round(STAGED_CHUNK_GRACE_MS / 60_000)} min ago`,
    );
  if (r.expiredGrants > 0) parts.push(`${dryRun ? 'would remove' : 'removed'} ${r.expiredGrants} expired upload grant${r.expiredGrants === 1 ? '' : 's'}`);
  if (r.errors.length > 0) parts.push(`${r.errors.length} could not be removed (${r.errors[0]!.message})`);
  return parts.join('; ');
}
