/**
 * Marks: sequences at which every conversation entry so far was final, with the entry and row counts
 * then, fed from the log's subscription as it grows; conversation-at.ts and rows.ts fold from them
 * (why: docs/inspector.md#design-notes).
 */
import type { SessionEvent } from '../events/envelope.ts';
import { emptyConversation, foldConversation, isSettled, type Conversation } from './conversation.ts';

export const CONVERSATION_MARK_EVERY = 250;

export interface ConversationMark {
  /** The sequence, id and time of the event the mark is at. */
  seq: number;
  eventId: string;
  time: number;
  /** Entries the conversation had at `seq`, all final. */
  first: number;
  /** Rows the projector had made for the session by `seq` (none of them changes after it). */
  rows: RowCounts;
}

/**
 * Rows the projector makes (src/projector/projector.ts): an input per `input.admitted`; a message per
 * `input.promoted` (the user's), per `step.started` of a new message id, per `compaction.started`
 * and per item of a `session.forked` transcript; a recovery per `recovery.completed` that admitted a
 * continuation. (Execution rows live only while their turn runs: a mark has none.)
 */
export interface RowCounts {
  inputs: number;
  messages: number;
  recoveries: number;
}

/** Events after which a session may be settled (a mark is only looked for then). */
const ENDINGS = new Set(['execution.settled', 'execution.cancelled', 'input.dropped', 'recovery.completed', 'recovery.wake_delivered']);

interface Indexed {
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

  constructor(private readonly every = CONVERSATION_MARK_EVERY) {}

  add(events: readonly SessionEvent[]): void {
    const bySession = new Map<string, SessionEvent[]>();
    for (const e of events) {
      let list = bySession.get(e.sessionId);
      if (!list) bySession.set(e.sessionId, (list = []));
      list.push(e);
    }
    for (const [sessionId, list] of bySession) this.addSession(sessionId, list);
  }

  /** The session's marks, ascending by sequence (empty: none yet; fold from seq 0). */
  marksOf(sessionId: string): readonly ConversationMark[] {
    return this.sessions.get(sessionId)?.marks ?? [];
  }

  /** The sequence folded so far for the session (0: none). */
  indexedSeq(sessionId: string): number {
    return this.sessions.get(sessionId)?.tail.seq ?? 0;
  }

  private addSession(sessionId: string, events: readonly SessionEvent[]): void {
    let s = this.sessions.get(sessionId);
    let pending: SessionEvent[] = [];
    const fold = () => {
      if (pending.length > 0) s!.tail = foldConversation(s!.tail, pending);
      pending = [];
    };
    for (const e of events) {
      if (!s || (e.seq === 1 && s.tail.seq + pending.length > 0)) {
        // a new session, or one deleted and written again
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
      s.marks.push({ seq: e.seq, eventId: e.id, time: e.time, first, rows: { ...s.rows } });
      s.steps.clear();
      s.tail = { ...emptyConversation(sessionId), seq: e.seq, eventId: e.id, time: e.time, first };
    }
    fold();
  }
}
