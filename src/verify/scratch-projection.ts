/**
 * The current projector folding the log into a scratch in-memory database, as a worker's would:
 * an event it rejects (a ProjectionError names it) is a refusal of its session, whose later events
 * are left out so the rest of the log goes on folding; so are the events of a session with an
 * undecodable event.
 */
import { ProjectionError, messageOf } from '../errors.ts';
import type { SessionEvent } from '../events/envelope.ts';
import { Projector } from '../projector/projector.ts';
import { migrate } from '../storage/sqlite/migrate.ts';
import { openDatabase, type Db } from '../storage/sqlite/database.ts';
import type { Problem } from './problems.ts';
import type { StoredItem } from './stored-log.ts';

export class ScratchProjection {
  readonly db: Db;
  private readonly projector: Projector;
  /** Sessions the projector refused, with the refusal. */
  readonly refused = new Map<string, Problem>();
  /** Sessions left out because an event of theirs does not decode. */
  readonly undecodable = new Set<string>();

  constructor() {
    this.db = openDatabase(':memory:');
    migrate(this.db);
    this.projector = new Projector(this.db, { name: 'verify' });
  }

  /** Whether the session's projection was folded whole (so far). */
  folds(sessionId: string): boolean {
    return !this.refused.has(sessionId) && !this.undecodable.has(sessionId);
  }

  apply(items: readonly StoredItem[]): void {
    let events: SessionEvent[] = [];
    for (const item of items) {
      if ('undecodable' in item) this.undecodable.add(item.undecodable.sessionId);
      else if (this.folds(item.event.sessionId)) events.push(item.event);
    }
    while (events.length > 0) {
      try {
        this.projector.apply(events);
        return;
      } catch (err) {
        if (!(err instanceof ProjectionError)) throw err;
        const why = err.cause === undefined ? err.message : messageOf(err.cause);
        this.refused.set(err.sessionId, { kind: 'refused', seq: err.seq, reason: `the projector refuses event ${err.eventId} (${err.eventType}): ${why}` });
        events = events.filter((e) => e.sessionId !== err.sessionId); // the batch rolled back: again without that session
      }
    }
  }

  close(): void {
    this.db.close();
  }
}
