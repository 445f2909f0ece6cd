import type { Migration } from '../migration.ts';

/**
 * Input ids (and the user messages that take them) are unique per session, not globally: two
 * sessions may both admit an input `inp_1`. Key `session_input` and `session_message` by
 * (session_id, id). SQLite cannot change a primary key in place, so both tables are rebuilt with
 * their rows and indexes.
 */
export const migration003: Migration = {
  version: 3,
  name: 'session_scoped_ids',
  up: `
    CREATE TABLE session_input_v3 (
      id           TEXT,
      session_id   TEXT NOT NULL,
      prompt       TEXT NOT NULL,
      delivery     TEXT NOT NULL CHECK (delivery IN ('steer', 'queue')),
      admitted_seq INTEGER NOT NULL,
      promoted_seq INTEGER,
      wake_pending INTEGER NOT NULL DEFAULT 0,
      time_created INTEGER NOT NULL,
      PRIMARY KEY (session_id, id)
    );
    INSERT INTO session_input_v3 (id, session_id, prompt, delivery, admitted_seq, promoted_seq, wake_pending, time_created)
      SELECT id, session_id, prompt, delivery, admitted_seq, promoted_seq, wake_pending, time_created FROM session_input;
    DROP TABLE session_input;
    ALTER TABLE session_input_v3 RENAME TO session_input;
    CREATE INDEX session_input_session_idx ON session_input (session_id, admitted_seq);
    CREATE INDEX session_input_wake_idx ON session_input (session_id) WHERE wake_pending = 1 AND promoted_seq IS NULL;

    CREATE TABLE session_message_v3 (
      id           TEXT,
      session_id   TEXT NOT NULL,
      type         TEXT NOT NULL,
      seq          INTEGER NOT NULL,
      time_created INTEGER NOT NULL,
      time_updated INTEGER NOT NULL,
      data         TEXT NOT NULL,
      PRIMARY KEY (session_id, id)
    );
    INSERT INTO session_message_v3 (id, session_id, type, seq, time_created, time_updated, data)
      SELECT id, session_id, type, seq, time_created, time_updated, data FROM session_message;
    DROP TABLE session_message;
    ALTER TABLE session_message_v3 RENAME TO session_message;
    CREATE INDEX session_message_session_type_seq_idx ON session_message (session_id, type, seq);
  `,
};
