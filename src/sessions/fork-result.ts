/** What `sessions.fork` takes and answers (sessions/fork.ts does it). */
import type { Tags } from '../events/tags.ts';

export interface ForkOptions {
  /** The source's sequence to fork at: a settled point (default: the source's last one). */
  at?: number;
  /** Tags for the new session (the source's are not copied). */
  tags?: Tags;
  /**
   * Who forks (sessions/owner.ts): a source another owner holds answers `not_found`. The fork gets
   * the source's owner, or this one when the source has none.
   */
  owner?: string;
}

export interface ForkResult {
  sessionId: string;
  /** The source and the sequence the fork holds its conversation up to. */
  from: { sessionId: string; seq: number };
  /** The sequence of the new session's `session.forked` (1). */
  seq: number;
  /** False when this fork was made before (the same source, sent again). */
  created: boolean;
  /** How many conversation items (prompts, steps, summaries) the new session starts with. */
  items: number;
}
