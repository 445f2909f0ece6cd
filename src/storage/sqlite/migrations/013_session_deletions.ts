import type { Migration } from '../migration.ts';

/**
 * Deleting sessions. The event table's positions become AUTOINCREMENT: a position is never used
 * twice, even after the newest events were deleted (plain rowids would hand the next append the
 * position of a deleted event, which readers following the log have already passed). The table is
 * copied once, positions kept, and its unique (session, seq) index made again.
 *
 * The audit of deleted sessions (`sessiond delete`, `sessiond retain`): who deleted which session,
 * when and why, how many events it had, and where it was archived; never its content. `head_position`
 * is the log's head when it was deleted: a projector that read the session's events before the
 * delete skips them (positions at or below it), while a later session of the same id is folded.
 */
export const migration013: Migration = {
  version: 13,
  name: 'session_deletions',
  up: `
    ALTER TABLE event RENAME TO event_before_013;
    CREATE TABLE event (
      position     INTEGER PRIMARY KEY AUTOINCREMENT,
      id           TEXT NOT NULL UNIQUE,
      aggregate_id TEXT NOT NULL,
      seq          INTEGER NOT NULL,
      type         TEXT NOT NULL,
      version      INTEGER NOT NULL,
      time         INTEGER NOT NULL,
      data         BLOB NOT NULL,
      committed_at INTEGER
    );
    INSERT INTO event (position, id, aggregate_id, seq, type, version, time, data, committed_at)
      SELECT position, id, aggregate_id, seq, type, version, time, data, committed_at FROM event_before_013;
    DROP TABLE event_before_013;
    CREATE UNIQUE INDEX event_aggregate_seq_idx ON event (aggregate_id, seq);
    CREATE TABLE session_deletion (
      id             INTEGER PRIMARY KEY,
      session_id     TEXT NOT NULL,
      deleted_at     INTEGER NOT NULL,
      deleted_by     TEXT NOT NULL,
      reason         TEXT,
      events         INTEGER NOT NULL,
      last_seq       INTEGER NOT NULL,
      head_position  INTEGER NOT NULL,
      archived_to    TEXT
    );
    CREATE INDEX session_deletion_head_idx ON session_deletion (head_position);
    CREATE INDEX session_deletion_session_idx ON session_deletion (session_id, deleted_at);
  `,
};
