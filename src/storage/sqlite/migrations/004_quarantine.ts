import type { Migration } from '../migration.ts';

/**
 * Messages of the log that a worker could not read as sessiond events and skipped (quarantined):
 * one row per log position, so `sessiond check` and operators can find them after the fact.
 */
export const migration004: Migration = {
  version: 4,
  name: 'quarantine',
  up: `
    CREATE TABLE quarantined_message (
      position     INTEGER PRIMARY KEY,
      subject      TEXT NOT NULL,
      session_id   TEXT NOT NULL,
      code         TEXT NOT NULL,
      message      TEXT NOT NULL,
      size         INTEGER NOT NULL,
      time_created INTEGER NOT NULL
    );
  `,
};
