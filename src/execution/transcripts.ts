/**
 * The transcripts of the sessions this worker runs, kept folded between turns: a turn's `history()`
 * reads only the events committed since the session's last fold (pages of 1,000), never a query per
 * message. The least recently used sessions are dropped beyond `size` (a later turn of a dropped
 * session folds its log again).
 */
import type { EventLog } from '../events/event-log.ts';
import { emptyTranscript, foldTranscript, type Transcript } from '../runner/transcript.ts';

const PAGE = 1000;
export const DEFAULT_TRANSCRIPT_CACHE = 256;

export class Transcripts {
  private readonly cache = new Map<string, Transcript>();

  constructor(
    private readonly log: EventLog,
    private readonly size = DEFAULT_TRANSCRIPT_CACHE,
  ) {}

  /** The session's transcript as the log has it now. */
  async of(sessionId: string): Promise<Transcript> {
    let t = this.cache.get(sessionId) ?? emptyTranscript;
    for (;;) {
      const events = await this.log.readSession(sessionId, { afterSeq: t.seq, limit: PAGE });
      t = foldTranscript(t, events);
      if (events.length < PAGE) break;
    }
    const cached = this.cache.get(sessionId);
    if (!cached || cached.seq <= t.seq) {
      this.cache.delete(sessionId); // re-inserted as the most recently used
      this.cache.set(sessionId, t);
      if (this.cache.size > this.size) this.cache.delete(this.cache.keys().next().value!);
    }
    return t;
  }
}
