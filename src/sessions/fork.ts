/**
 * Forking a session (`sessions.fork`): a new session whose first event, `session.forked`, holds the
 * source's conversation up to a settled point (its transcript, as the model runner folds it), then
 * lives its own life. The source is only read. Idempotent: the same fork sent again answers
 * `created: false` with the fork it made. The fork copies the source's owner (sessions/owner.ts).
 */
import { ErrorCode, SessiondError, isRefusal } from '../errors.ts';
import { validateId } from '../ids.ts';
import type { CommandHandler } from '../execution/command-handler.ts';
import { DEFAULT_MAX_PAYLOAD_BYTES } from '../events/codec.ts';
import { evolve, initialSnapshot } from '../machines/decider.ts';
import { emptyTranscript, foldTranscript, type TranscriptItem } from '../events/transcript.ts';
import { validateTags, type Tags } from '../events/tags.ts';
import { forkSeq, isSettledPoint } from './fork-point.ts';
import { unknownSession } from './status.ts';
import { checkOwner, ownerReaches, unreachable } from './owner.ts';
import type { ForkOptions, ForkResult } from './fork-result.ts';
import type { BlobStore } from '../blobs/blob-store.ts';
import { executeMarked, markOf, touchAll, type BlobMark } from '../execution/blob-marks.ts';

export type { ForkOptions, ForkResult };

const PAGE = 1000;

/** Where the blobs a fork copies references to live, and the grace period deletes and sweeps keep unreferenced ones for. */
export interface ForkBlobs {
  store: BlobStore;
  graceMs: number;
}

export async function forkSession(
  handler: CommandHandler,
  sourceId: string,
  sessionId: string,
  options: ForkOptions = {},
  blobs?: ForkBlobs,
): Promise<ForkResult> {
  validateId(sourceId, 'source session id');
  validateId(sessionId, 'session id');
  if (sourceId === sessionId) throw new SessiondError(ErrorCode.InvalidOption, `Cannot fork session ${sourceId} into itself: give a new session id.`);
  const tags = options.tags === undefined ? undefined : (validateTags(options.tags, 'the fork') as Tags);
  const asker = options.owner === undefined ? undefined : checkOwner(options.owner);
  const existing = await handler.load(sessionId);
  if (existing.context.seq > 0) return sentAgain(sessionId, sourceId, existing.context, options.at, asker);
  const { settled, head, ownedBy } = await settledPoints(handler, sourceId);
  if (!ownerReaches(ownedBy, asker)) throw unreachable(sourceId);
  // the fork belongs to the source's owner; an ownerless source's fork to whoever forks it
  const owner = ownedBy ?? asker;
  const seq = forkSeq(sourceId, settled, head, options.at);
  const transcript = await transcriptAt(handler, sourceId, seq);
  const from = { sessionId: sourceId, seq };
  const size = Buffer.byteLength(JSON.stringify(transcript.items));
  if (size > DEFAULT_MAX_PAYLOAD_BYTES - 4096) {
    throw new SessiondError(
      ErrorCode.PayloadTooLarge,
      `Cannot fork: the conversation of session ${sourceId} up to sequence ${seq} is ${size} bytes, over the ${DEFAULT_MAX_PAYLOAD_BYTES} bytes one event holds. Fork at an earlier point, or let the source compact its history first (a compaction's summary replaces what came before).`,
      { details: { sessionId: sourceId, seq, bytes: size } },
    );
  }
  const items = transcript.items.map(storable);
  try {
    const mark = blobs ? await markCopied(handler, blobs, sourceId, seq, items) : undefined;
    const { events } = await executeMarked(handler, sessionId, mark, (now) => ({
      type: 'fork',
      now,
      from,
      transcript: items,
      ...(tags && Object.keys(tags).length > 0 ? { tags } : {}),
      ...(owner === undefined ? {} : { owner }),
    }));
    return { sessionId, from, seq: events[0]!.seq, created: true, items: transcript.items.length };
  } catch (err) {
    if (!isRefusal(err, 'session_exists')) throw err;
    return sentAgain(sessionId, sourceId, (await handler.load(sessionId)).context, options.at, asker); // a concurrent fork won the race
  }
}

/**
 * Marks the blobs the fork copies references to as put now (a touch each, no bytes read), before
 * its event is appended: a delete of the source that read the references before the fork landed
 * then keeps them (its cut is taken before that read). A blob already gone refuses the fork.
 */
async function markCopied(handler: CommandHandler, blobs: ForkBlobs, sourceId: string, seq: number, items: TranscriptItem[]): Promise<BlobMark | undefined> {
  const missing = (sha256: string) =>
    new SessiondError(
      ErrorCode.NotFound,
      `Cannot fork session ${sourceId} at sequence ${seq}: its conversation references blob ${sha256}, which is no longer stored (the session is being deleted, or the blob was lost: sessiond check reports it). Fork at an earlier point (--at) before the part that references it.`,
      { details: { sessionId: sourceId, seq, sha256 } },
    );
  const mark = markOf({ type: 'session.forked', payload: { transcript: items } }, handler.clock.now(), blobs.graceMs, (hashes) =>
    touchAll(blobs.store, hashes, missing),
  );
  await mark?.remark();
  return mark;
}

/** An item as the log stores it: a tool call made without input holds `null` (a JSON value; an absent key does not read back). */
function storable(item: TranscriptItem): TranscriptItem {
  if (item.type !== 'assistant' || !item.parts.some((p) => p.type === 'tool' && p.input === undefined)) return item;
  return { ...item, parts: item.parts.map((p) => (p.type === 'tool' && p.input === undefined ? { ...p, input: null } : p)) };
}

/** The answer to a fork into a session that has events: the same fork again, or `session_exists`. */
function sentAgain(
  sessionId: string,
  sourceId: string,
  ctx: { seq: number; forkedFrom: { sessionId: string; seq: number } | null; ownedBy: string | null },
  at: number | undefined,
  asker: string | undefined,
): ForkResult {
  if (!ownerReaches(ctx.ownedBy, asker)) throw unreachable(sessionId);
  const f = ctx.forkedFrom;
  if (f && f.sessionId === sourceId && (at === undefined || at === f.seq)) return { sessionId, from: f, seq: 1, created: false, items: 0 };
  throw new SessiondError(
    ErrorCode.SessionExists,
    `Cannot fork into session ${sessionId}: it already has ${ctx.seq} events${f ? ` (a fork of ${f.sessionId} at sequence ${f.seq})` : ''}. Fork into a new session id.`,
    { details: { sessionId, forkedFrom: f } },
  );
}

/** Every settled point of the source (in order) and its last sequence: one read of its log. */
async function settledPoints(handler: CommandHandler, sourceId: string): Promise<{ settled: number[]; head: number; ownedBy: string | null }> {
  let snapshot = initialSnapshot(sourceId);
  const settled: number[] = [];
  for (;;) {
    const events = await handler.log.readSession(sourceId, { afterSeq: snapshot.context.seq, limit: PAGE });
    for (const e of events) {
      snapshot = evolve(snapshot, e);
      if (isSettledPoint(snapshot)) settled.push(e.seq);
    }
    if (events.length < PAGE) break;
  }
  if (snapshot.context.seq === 0) throw unknownSession(sourceId, 'fork');
  return { settled, head: snapshot.context.seq, ownedBy: snapshot.context.ownedBy ?? null };
}

/** The source's transcript as it was at `seq`. */
async function transcriptAt(handler: CommandHandler, sourceId: string, seq: number) {
  let t = emptyTranscript;
  while (t.seq < seq) {
    const events = await handler.log.readSession(sourceId, { afterSeq: t.seq, limit: Math.min(PAGE, seq - t.seq) });
    if (events.length === 0) break;
    t = foldTranscript(t, events);
  }
  return t;
}
