/**
 * Marks: sequences at which every conversation entry so far was final, with the entry and row counts
 * then, fed from the log's subscription as it grows and kept in the inspector's index
 * (index-store.ts); conversation-at.ts and rows.ts fold from them (why: docs/inspector.md#design-notes).
 * A session the index already has marks for is resumed from its last mark once the subscription
 * brings that mark's event (the same id: else the marks are of an older life and are forgotten).
 */
import type { SessionEvent } from '../events/envelope.ts';
import { emptyConversation, foldConversation, isSettled, type Conversation } from './conversation.ts';
import { MemoryInspectorIndex, type ConversationMark, type InspectorIndexStore, type RowCounts } from './index-store.ts';

export const CONVERSATION_MARK_EVERY = 250;

export type { ConversationMark, RowCounts } from './index-store.ts';

/** Events after which a session may be settled (a mark is only looked for then). */
const ENDINGS = new Set(['execution.settled', 'execution.cancelled', 'input.dropped', 'recovery.completed', 'recovery.wake_delivered']);

interface Indexed {
  /** The index's last mark, while the subscription has not brought its event yet: events before it are skipped. */
  resume?: ConversationMark;
  /** The fold since the latest mark (a tail: its `first` is that mark's). */
  tail: Conversation;
  marks: ConversationMark[];
  /** Rows made so far, and the step messages made since the latest mark (a step started again keeps its row). */
  rows: RowCounts;
  steps: Set<string>;
}

function countRows(s: Indexed, e: SessionEvent): void {
  switch (e.type) {
    case 'input.admitted':
      s.rows.inputs++;
      break;
    case 'input.promoted':
    case 'compaction.started':
      s.rows.messages++;
      break;
    case 'step.started':
      if (!s.steps.has(e.payload.messageId)) s.rows.messages++;
      s.steps.add(e.payload.messageId);
      break;
    case 'session.forked':
      s.rows.messages += e.payload.transcript.length;
      break;
    case 'recovery.completed':
      if (e.payload.continuationInputId !== null) s.rows.recoveries++;
      break;
    default:
      break;
  }
}

export class ConversationMarks {
  private readonly sessions = new Map<string, Indexed>();

  constructor(
    private readonly every = CONVERSATION_MARK_EVERY,
    private readonly index: InspectorIndexStore = new MemoryInspectorIndex(),
  ) {}

  add(events: readonly SessionEvent[]): void {
    const bySession = new Map<string, SessionEvent[]>();
    for (const e of events) {
      let list = bySession.get(e.sessionId);
      if (!list) bySession.set(e.sessionId, (list = []));
      list.push(e);
    }
    for (const [sessionId, list] of bySession) this.addSession(sessionId, list);
  }

  /** Drops what memory holds of the session: an older life of it (the caller has the index forget its marks too), or one let go (its marks stay kept; resumed from the last). */
  forget(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  /** The session's marks, ascending by sequence (empty: none yet; fold from seq 0). */
  marksOf(sessionId: string): readonly ConversationMark[] {
    return (this.sessions.get(sessionId) ?? this.resumed(sessionId))?.marks ?? [];
  }

  /** The sequence folded so far for the session (0: none). */
  indexedSeq(sessionId: string): number {
    const s = this.sessions.get(sessionId);
    return s?.resume ? 0 : (s?.tail.seq ?? 0);
  }

  /** The seq up to which the session's events were taken (resumed from the index: the one before its last mark's, which must come again). */
  coveredSeq(sessionId: string): number {
    const s = this.sessions.get(sessionId) ?? this.resumed(sessionId);
    if (!s) return 0;
    return s.resume ? s.resume.seq - 1 : s.tail.seq;
  }

  /** The session as the index left it (its marks; resumed from the last one), undefined when it has none. */
  private resumed(sessionId: string): Indexed | undefined {
    const marks = this.index.marksOf(sessionId);
    const last = marks.at(-1);
    if (!last) return undefined;
    const s: Indexed = { resume: last, tail: emptyConversation(sessionId), marks, rows: { ...last.rows }, steps: new Set() };
    this.sessions.set(sessionId, s);
    return s;
  }

  private addSession(sessionId: string, events: readonly SessionEvent[]): void {
    let s = this.sessions.get(sessionId) ?? this.resumed(sessionId);
    let pending: SessionEvent[] = [];
    const fold = () => {
      if (pending.length > 0) s!.tail = foldConversation(s!.tail, pending);
      pending = [];
    };
    for (const e of events) {
      if (s?.resume) {
        const mark = s.resume;
        if (e.seq < mark.seq) continue; // the index has marked it already
        if (e.seq === mark.seq && e.id === mark.eventId) {
          delete s.resume;
          s.tail = { ...emptyConversation(sessionId), seq: mark.seq, eventId: mark.eventId, time: mark.time, first: mark.first };
          continue;
        }
        // the marks are of an older life of the session (or the subscription joined past them)
        this.index.forget(sessionId);
        this.sessions.delete(sessionId);
        s = undefined;
      }
      if (!s || (e.seq === 1 && s.tail.seq + pending.length > 0)) {
        // a new session, or one deleted and written again
        if (s && s.marks.length > 0) this.index.forget(sessionId);
        if (e.seq !== 1) continue; // joined past its start: the session is folded from the log, unmarked
        pending = [];
        this.sessions.set(
          sessionId,
          (s = { tail: emptyConversation(sessionId), marks: [], rows: { inputs: 0, messages: 0, recoveries: 0 }, steps: new Set() }),
        );
      }
      if (e.seq !== s.tail.seq + pending.length + 1) continue; // redelivered (or past a gap: left unmarked from here)
      pending.push(e);
      countRows(s, e);
      const last = s.marks.at(-1)?.seq ?? 0;
      if (!ENDINGS.has(e.type) || e.seq - last < this.every) continue;
      fold();
      if (!isSettled(s.tail)) continue;
      const first = (s.tail.first ?? 0) + s.tail.entries.length;
      const mark = { seq: e.seq, eventId: e.id, time: e.time, first, rows: { ...s.rows } };
      s.marks.push(mark);
      this.index.putMarks(sessionId, [mark]);
      s.steps.clear();
      s.tail = { ...emptyConversation(sessionId), seq: e.seq, eventId: e.id, time: e.time, first };
    }
    fold();
  }
}
