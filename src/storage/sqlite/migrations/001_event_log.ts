import type { Migration } from '../migration.ts';

/** The embedded event log, and the first session tables. */
export const migration001: Migration = {
  version: 1,
  name: 'event_log',
  up: `
    CREATE TABLE event (
      position     INTEGER PRIMARY KEY,
      id           TEXT NOT NULL UNIQUE,
      aggregate_id TEXT NOT NULL,
      seq          INTEGER NOT NULL,
      type         TEXT NOT NULL,
      version      INTEGER NOT NULL,
      time         INTEGER NOT NULL,
      data         BLOB NOT NULL
    );
    CREATE UNIQUE INDEX event_aggregate_seq_idx ON event (aggregate_id, seq);

    CREATE TABLE session_execution (
      id                   TEXT PRIMARY KEY,
      session_id           TEXT NOT NULL,
      owner_id             TEXT NOT NULL,
      assistant_message_id TEXT,
      phase                TEXT NOT NULL,
      assistant_seq        INTEGER NOT NULL DEFAULT -1,
      time_created         INTEGER NOT NULL,
      expires_at           INTEGER NOT NULL,
      recovery_error       TEXT
    );
    CREATE INDEX session_execution_owner_idx ON session_execution (owner_id);
    CREATE INDEX session_execution_session_idx ON session_execution (session_id);

    CREATE TABLE session_message (
      id           TEXT PRIMARY KEY,
      session_id   TEXT NOT NULL,
      type         TEXT NOT NULL,
      seq          INTEGER NOT NULL,
      time_created INTEGER NOT NULL,
      time_updated INTEGER NOT NULL,
      data         TEXT NOT NULL
    );
    CREATE INDEX session_message_session_type_seq_idx ON session_message (session_id, type, seq);
  `,
};
