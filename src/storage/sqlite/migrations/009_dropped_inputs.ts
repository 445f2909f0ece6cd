import type { Migration } from '../migration.ts';

/**
 * Inputs dropped unrun (`input.dropped`, `sessiond cancel --pending`): `dropped_seq` is the drop's
 * sequence, NULL otherwise. A pending input is one neither promoted nor dropped.
 */
export const migration009: Migration = {
  version: 9,
  name: 'dropped_inputs',
  up: `
    ALTER TABLE session_input ADD COLUMN dropped_seq INTEGER;
  `,
};
