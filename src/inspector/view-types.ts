/**
 * The shapes the inspector's modules share: a timeline row and page (timeline.ts builds them), a
 * travelled session (travel.ts), both shown by the JSON views (views.ts). Kept here so that the
 * views and the modules they show import these from one place, not from each other.
 */
import type { SessionEvent } from '../events/envelope.ts';
import type { SessionSnapshot } from '../machines/decider.ts';

export interface TimelineRow {
  seq: number;
  type: string;
  /** When the writer decided the event; `committedAt` when the log stored it (null: not recorded). */
  time: number;
  committedAt: number | null;
  position: number | null;
  id: string;
  payload: unknown;
}

export interface TimelinePage {
  sessionId: string;
  lastSeq: number;
  events: TimelineRow[];
  /** Pass as `before=` for the page before this one; null when nothing matching is earlier. */
  before: number | null;
  /** Pass as `after=` for the page after this one; null when nothing matching is later (yet). */
  after: number | null;
  /** For a text search: the sequences this request searched. */
  scanned?: { from: number; to: number };
}

export interface Travelled {
  /** The session folded up to the sequence asked for. */
  snapshot: SessionSnapshot;
  /** The session one event earlier (null at seq 0). */
  previous: SessionSnapshot | null;
  /** The event at that sequence (null at seq 0). */
  event: SessionEvent | null;
  /** The session's last sequence in the log. */
  lastSeq: number;
}
