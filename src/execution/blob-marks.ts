/**
 * An append whose event references blobs it marked (put, or touched) before: the decision checks,
 * with its own `now`, that less than half the blob grace period has passed since the mark, so a
 * delete or a sweep (which removes unreferenced blobs last put before `now - grace`) cannot have
 * removed them before the event lands. A mark grown too old is renewed and the append decided again.
 * Why: docs/architecture.md ("Blobs: nothing left behind").
 */
import type { BlobStore } from '../blobs/blob-store.ts';
import { blobRefsOf } from '../events/blob-refs.ts';
import type { EventType } from '../events/catalog.ts';
import { ErrorCode, SessiondError } from '../errors.ts';
import type { Build, CommandHandler, CommandResult } from './command-handler.ts';

/** Renewals of a mark before the append is refused (each one means the append took half the grace again). */
export const MAX_BLOB_REMARKS = 3;

export interface BlobMark {
  /** The blobs the event references (their hashes). */
  hashes: readonly string[];
  /** When they were marked (the handler's clock, read before the marking began). */
  markedAt: number;
  /** The grace period deletes and sweeps keep unreferenced blobs for (0: no check; nothing is safe then). */
  graceMs: number;
  /** Marks them again (puts or touches them), throwing what the caller should see when one is gone. */
  remark: () => Promise<void>;
}

/**
 * The mark of the blobs an event to append references, marked at `markedAt` (undefined when it
 * references none); `remark(hashes)` is how they are marked again (stored again, or touched).
 */
export function markOf(
  event: { type: EventType; payload: unknown },
  markedAt: number,
  graceMs: number,
  remark: (hashes: readonly string[]) => () => Promise<void>,
): BlobMark | undefined {
  const hashes = blobRefsOf(event as never).map((r) => r.sha256);
  return hashes.length === 0 ? undefined : { hashes, markedAt, graceMs, remark: remark(hashes) };
}

/** Is a mark made at `markedAt` still safe to append under at `now`? Pure: less than half the grace has passed. */
export function freshMark(markedAt: number, now: number, graceMs: number): boolean {
  return graceMs === 0 || now - markedAt < graceMs / 2;
}

/** Thrown from inside the decision: the mark is too old; caught below and never seen by a caller. */
class StaleMark extends SessiondError {
  constructor(readonly now: number) {
    super(ErrorCode.Timeout, 'stale blob mark: marked again and decided again');
  }
}

/** `handler.execute` with the mark checked in each decision (no mark, or no hashes: as is). */
export async function executeMarked(handler: CommandHandler, sessionId: string, mark: BlobMark | undefined, build: Build): Promise<CommandResult> {
  if (!mark || mark.hashes.length === 0) return handler.execute(sessionId, build);
  let markedAt = mark.markedAt;
  for (let remarks = 0; ; remarks++) {
    try {
      return await handler.execute(sessionId, (now, snapshot) => {
        if (!freshMark(markedAt, now, mark.graceMs)) throw new StaleMark(now);
        return build(now, snapshot);
      });
    } catch (err) {
      if (!(err instanceof StaleMark)) throw err;
      if (remarks >= MAX_BLOB_REMARKS) throw staleError(sessionId, mark, err.now - markedAt);
      markedAt = handler.clock.now();
      await mark.remark();
    }
  }
}

/** A remark that touches each blob (a fork's: it copies references, it has no bytes); a blob gone is `missing(sha256)`. */
export function touchAll(store: BlobStore, hashes: readonly string[], missing: (sha256: string) => Error): () => Promise<void> {
  return async () => {
    for (const sha256 of hashes) if (!(await store.touch(sha256))) throw missing(sha256);
  };
}

function staleError(sessionId: string, mark: BlobMark, elapsed: number): SessiondError {
  return new SessiondError(
    ErrorCode.Timeout,
    `Nothing was appended to session ${sessionId}: ${elapsed} ms passed between marking its ${mark.hashes.length} blob(s) and deciding the append, ${MAX_BLOB_REMARKS + 1} times in a row, half the blob grace period (${mark.graceMs} ms) or more, so a delete or a sweep could remove them first. The worker is overloaded or its clock jumps: send the request again.`,
    { details: { sessionId, graceMs: mark.graceMs, elapsedMs: elapsed } },
  );
}
