import type { Migration } from '../migration.ts';

/**
 * The fleet's model-call capacity (src/capacity/): one row, `id` 1, its state as JSON, written by
 * every worker of the file in IMMEDIATE transactions. Not part of the log or the projection.
 */
export const migration015: Migration = {
  version: 15,
  name: 'capacity_state',
  up: `
    CREATE TABLE capacity_state (
      id           INTEGER PRIMARY KEY CHECK (id = 1),
      state        TEXT NOT NULL,
      time_updated INTEGER NOT NULL
    );
  `,
};
