/**
 * Appending to the JetStream event log: one append = one message on `sessiond.events.<session>`,
 * fenced by `Nats-Expected-Last-Subject-Sequence`, deduplicated by `Nats-Msg-Id`, with the session
 * tails cached. How: docs/nats.md#the-jetstream-event-log.
 */
import type { PubAck } from '@nats-io/jetstream';
import { ErrorCode, SessiondError, SequenceConflictError, messageOf } from '../errors.ts';
import { catalog } from '../events/catalog.ts';
import { checkPayloadSizes, prepareBatch } from '../events/prepare-batch.ts';
import type { DraftEvent, SessionEvent } from '../events/envelope.ts';
import { duplicateEventError } from '../events/event-log.ts';
import type { JetStreamLogBase } from './jetstream-log-base.ts';
import type { JetStreamReads } from './jetstream-reads.ts';
import { encodeBatch, isWrongLastSequence } from './stream.ts';
import { subjects } from './subjects.ts';

/** Room left for headers under the server's max_payload. */
const HEADER_ROOM_BYTES = 1024;

/** A session's last message: its stream sequence, last event seq and event ids. */
interface Tail {
  streamSeq: number;
  lastSeq: number;
  ids: string[];
}
/** A tail read from the server, with the events of that message. */
export interface LoadedTail extends Tail {
  events: SessionEvent[];
}

/** The tail of a session with no message. */
const NO_TAIL: Tail = { streamSeq: 0, lastSeq: 0, ids: [] };

export class JetStreamAppends {
  /** Session tails, least recently written first (at most `tailCacheSize`). */
  private readonly tails = new Map<string, Tail>();

  /** `reads` finds a session's last valid batch when its last message is quarantined. */
  constructor(
    private readonly base: JetStreamLogBase,
    private readonly reads: JetStreamReads,
  ) {}

  async append(sessionId: string, expectedSeq: number, drafts: DraftEvent[]): Promise<SessionEvent[]> {
    const b = this.base;
    b.assertOpen();
    const parsed = prepareBatch(sessionId, expectedSeq, drafts, { sizes: 'deferred' });
    const events = parsed.map(
      (d, i) =>
        ({
          id: d.id,
          type: d.type,
          version: catalog[d.type].version,
          sessionId,
          seq: expectedSeq + i + 1,
          time: d.time,
          payload: d.payload,
        }) as SessionEvent,
    );
    // one pack per append: payloads are measured one by one only when the message is over their limit
    const data = encodeBatch(events);
    if (data.byteLength > b.o.maxPayloadBytes) checkPayloadSizes(parsed, b.o.maxPayloadBytes);
    const limit = (b.nc.info?.max_payload ?? 1024 * 1024) - HEADER_ROOM_BYTES;
    if (data.byteLength > limit) {
      throw new SessiondError(
        ErrorCode.PayloadTooLarge,
        `Append to session ${sessionId} encodes to ${data.byteLength} bytes, over the NATS message limit of ${limit} bytes: append fewer or smaller events at once, or raise max_payload in nats.conf.`,
        { details: { sessionId, size: data.byteLength, max: limit } },
      );
    }
    const subject = subjects.events(sessionId);
    // a session not cached here, appended at 0, is published at once expecting none on its subject:
    // the server refuses it if the session exists, and the refusal is resolved below
    let tail = this.tails.get(sessionId) ?? (expectedSeq === 0 ? NO_TAIL : undefined);
    if (!tail || tail.lastSeq !== expectedSeq) {
      const loaded = await this.loadTail(sessionId);
      if (loaded.lastSeq !== expectedSeq) return this.resolveStale(sessionId, expectedSeq, parsed, loaded);
      tail = loaded;
    }
    // ids of the session's last batch reused in a new one (ids further back are caught only by the msg id)
    const lastIds = tail.ids;
    const reused = parsed.filter((d) => lastIds.includes(d.id)).map((d) => d.id);
    if (reused.length > 0) throw duplicateEventError(sessionId, reused);
    for (let attempt = 1; ; attempt++) {
      let ack: PubAck;
      try {
        ack = await this.publish(subject, data, parsed[0]!.id, tail.streamSeq);
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
        b.stats.wrongLastSequence++;
        const loaded = await this.loadTail(sessionId);
        // our cached stream sequence was stale but the session is where the caller expects: try again
        if (loaded.lastSeq === expectedSeq && attempt === 1) {
          tail = loaded;
          continue;
        }
        return this.resolveStale(sessionId, expectedSeq, parsed, loaded, err);
      }
      if (ack.duplicate) return this.resolveDuplicate(sessionId, expectedSeq, parsed, ack.seq);
      b.stats.published++;
      this.remember(sessionId, { streamSeq: ack.seq, lastSeq: expectedSeq + events.length, ids: events.map((e) => e.id) });
      // the ack carries no stored time: the writer's clock when the ack came back (reads give the server's)
      const committedAt = b.o.clock.now();
      const committed = events.map((e) => ({ ...e, position: ack.seq, committedAt }));
      b.published(ack.seq, subject, data.byteLength, committed);
      return committed;
    }
  }

  /** Reads the session's last message from the server (leader-consistent) and caches it. */
  async loadTail(sessionId: string): Promise<LoadedTail> {
    const b = this.base;
    const subject = subjects.events(sessionId);
    const sm = await b.request(() => b.jsm.streams.getMessage(b.stream, { last_by_subj: subject }));
    let events = sm ? b.decode(sm.data, sm.seq, sm.subject, sm.time) : [];
    // a quarantined last message: the session goes on from its last valid batch, and the next append
    // still expects the subject's real last stream sequence
    if (sm && events.length === 0) events = await this.reads.lastValidBatch(subject);
    const tail = { streamSeq: sm?.seq ?? 0, lastSeq: events[events.length - 1]?.seq ?? 0, ids: events.map((e) => e.id) };
    this.remember(sessionId, tail);
    return { ...tail, events };
  }

  /** Publishes with the batch's msg id and expectation, resending through outages (never written twice). */
  private publish(subject: string, data: Uint8Array, msgId: string, lastSubjectSequence: number): Promise<PubAck> {
    const b = this.base;
    return b.retrying(
      () => b.js.publish(subject, data, { msgID: msgId, expect: { lastSubjectSequence }, timeout: b.o.publishTimeoutMs }),
      (err) =>
        new SessiondError(
          ErrorCode.LogClosed,
          `Event log ${b.name} is unreachable: publishing to ${subject} failed for ${b.o.publishRetryMs} ms (${messageOf(err)}). The append may or may not have been written; retry the exact same append (same event ids) once NATS is back and it will not be written twice, or reload the session.`,
          { cause: err, details: { subject, msgId, outcome: 'unknown' } },
        ),
    );
  }

  /** expectedSeq is stale: the exact same batch already committed is a retry; anything else conflicts. */
  private resolveStale(sessionId: string, expectedSeq: number, drafts: DraftEvent[], tail: LoadedTail, cause?: unknown): SessionEvent[] {
    const stored = tail.events;
    if (sameIds(stored, drafts) && stored[0]!.seq === expectedSeq + 1) {
      this.base.stats.retriesRecognised++;
      return stored;
    }
    const reused = drafts.filter((d) => stored.some((e) => e.id === d.id)).map((d) => d.id);
    if (reused.length > 0) throw duplicateEventError(sessionId, reused);
    throw new SequenceConflictError(sessionId, expectedSeq, tail.lastSeq, cause);
  }

  /** The server already has a message with this batch's msg id: the same batch, or reused ids. */
  private async resolveDuplicate(sessionId: string, expectedSeq: number, drafts: DraftEvent[], streamSeq: number): Promise<SessionEvent[]> {
    const b = this.base;
    b.stats.duplicateAcks++;
    const stored = await b.request(() => b.jsm.streams.getMessage(b.stream, { seq: streamSeq }));
    const events = stored ? b.decode(stored.data, stored.seq, stored.subject, stored.time) : [];
    if (events[0]?.sessionId === sessionId && events[0].seq === expectedSeq + 1 && sameIds(events, drafts)) {
      b.stats.retriesRecognised++;
      return events;
    }
    throw duplicateEventError(
      sessionId,
      drafts.filter((d) => events.some((e) => e.id === d.id)).map((d) => d.id),
    );
  }

  private remember(sessionId: string, tail: Tail): void {
    const known = this.tails.get(sessionId);
    if (known && known.streamSeq > tail.streamSeq) return; // never move backwards
    this.tails.delete(sessionId);
    this.tails.set(sessionId, tail);
    if (this.tails.size > this.base.o.tailCacheSize) this.tails.delete(this.tails.keys().next().value!);
  }
}

function sameIds(a: { id: string }[], b: { id: string }[]): boolean {
  return a.length === b.length && a.every((e, i) => e.id === b[i]!.id);
}
