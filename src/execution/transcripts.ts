/**
 * The transcripts of the sessions this worker runs, kept folded between turns: a turn's `history()`
 * reads only the events committed since the session's last fold (pages of 1,000), never a query per
 * message. The least recently used sessions are dropped beyond `size` (a later turn of a dropped
 * session folds its log again).
 */
import type { EventLog } from '../events/event-log.ts';
import { emptyTranscript, foldTranscript, type Transcript } from '../events/transcript.ts';

const PAGE = 1000;
export const DEFAULT_TRANSCRIPT_CACHE = 256;

export class Transcripts {
  /** Each session's transcript and the id of the event at its `seq` (what the log must still hold there). */
  private readonly cache = new Map<string, { t: Transcript; head: string | null }>();

  constructor(
    private readonly log: EventLog,
    private readonly size = DEFAULT_TRANSCRIPT_CACHE,
  ) {}

  /** Drops the session's cached transcript. */
  forget(sessionId: string): void {
    this.cache.delete(sessionId);
  }

  /** The session's transcript as the log has it now. */
  async of(sessionId: string): Promise<Transcript> {
    const cached = this.cache.get(sessionId);
    let t = cached?.t ?? emptyTranscript;
    let head = cached?.head ?? null;
    // read from the cached head itself: a session deleted and begun again under its id has another event there
    let events = await this.log.readSession(sessionId, { afterSeq: Math.max(0, t.seq - 1), limit: PAGE });
    if (t.seq > 0 && events[0]?.id !== head) {
      t = emptyTranscript;
      events = await this.log.readSession(sessionId, { afterSeq: 0, limit: PAGE });
    } else if (t.seq > 0) events = events.slice(1);
    for (;;) {
      t = foldTranscript(t, events);
      if (events.length > 0) head = events[events.length - 1]!.id;
      if (events.length < PAGE - 1) break;
      events = await this.log.readSession(sessionId, { afterSeq: t.seq, limit: PAGE });
    }
    const now = this.cache.get(sessionId);
    if (!now || now.t.seq <= t.seq || now.head !== cached?.head) {
      this.cache.delete(sessionId); // re-inserted as the most recently used
      this.cache.set(sessionId, { t, head });
      if (this.cache.size > this.size) this.cache.delete(this.cache.keys().next().value!);
    }
    return t;
  }
}
