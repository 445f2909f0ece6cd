import type { Migration } from '../migration.ts';

/** Input inbox, recovery records and the projector checkpoint. */
export const migration002: Migration = {
  version: 2,
  name: 'inputs_recovery_checkpoint',
  up: `
    CREATE TABLE session_input (
      id           TEXT PRIMARY KEY,
      session_id   TEXT NOT NULL,
      prompt       TEXT NOT NULL,
      delivery     TEXT NOT NULL CHECK (delivery IN ('steer', 'queue')),
      admitted_seq INTEGER NOT NULL,
      promoted_seq INTEGER,
      wake_pending INTEGER NOT NULL DEFAULT 0,
      time_created INTEGER NOT NULL
    );
    CREATE INDEX session_input_session_idx ON session_input (session_id, admitted_seq);

    CREATE TABLE session_recovery (
      session_id              TEXT NOT NULL,
      execution_id            TEXT NOT NULL,
      assistant_message_id    TEXT,
      continuation_message_id TEXT NOT NULL,
      phase                   TEXT NOT NULL,
      wake_pending            INTEGER NOT NULL DEFAULT 1,
      wake_attempts           INTEGER NOT NULL DEFAULT 0,
      recovery_error          TEXT,
      time_created            INTEGER NOT NULL
    );
    CREATE UNIQUE INDEX session_recovery_execution_idx ON session_recovery (execution_id);

    CREATE TABLE projector_checkpoint (
      name     TEXT PRIMARY KEY,
      position INTEGER NOT NULL
    );
  `,
};
