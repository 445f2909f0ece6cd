import type { Migration } from '../migration.ts';

/**
 * One row per session, for listing and searching (`list`, `sessiond ls`): its state, whether it
 * waits, its pending inputs, when it was created and last changed, its tags (and, for a fork, its
 * source); one row per tag in `session_tag`, indexed by key and value. Pages are read newest first by
 * (time_created, session_id), a key that never changes, so a cursor is stable while sessions change.
 *
 * These rows can only be folded from the log (tags live in its events), so the migration empties
 * the projection and its checkpoints: the next worker (or `sessiond rebuild`) folds the whole log
 * again. The log itself is untouched.
 */
export const migration011: Migration = {
  version: 11,
  name: 'session_list',
  up: `
    CREATE TABLE session (
      session_id     TEXT PRIMARY KEY,
      state          TEXT NOT NULL,
      waiting        INTEGER NOT NULL DEFAULT 0,
      pending_inputs INTEGER NOT NULL DEFAULT 0,
      last_seq       INTEGER NOT NULL,
      time_created   INTEGER NOT NULL,
      time_updated   INTEGER NOT NULL,
      tags           TEXT NOT NULL DEFAULT '{}',
      forked_from    TEXT,
      forked_seq     INTEGER
    );
    CREATE INDEX session_created_idx ON session (time_created, session_id);
    CREATE INDEX session_state_created_idx ON session (state, time_created, session_id);
    CREATE INDEX session_waiting_created_idx ON session (time_created, session_id) WHERE waiting = 1;
    CREATE INDEX session_updated_idx ON session (time_updated);

    CREATE TABLE session_tag (
      session_id   TEXT NOT NULL,
      key          TEXT NOT NULL,
      value        TEXT NOT NULL,
      time_created INTEGER NOT NULL,
      PRIMARY KEY (session_id, key)
    );
    CREATE INDEX session_tag_lookup_idx ON session_tag (key, value, time_created, session_id);

    DELETE FROM session_execution;
    DELETE FROM session_input;
    DELETE FROM session_message;
    DELETE FROM session_recovery;
    DELETE FROM session_wait;
    DELETE FROM projector_checkpoint;
  `,
};
