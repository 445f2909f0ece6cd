import type { Migration } from '../migration.ts';

/**
 * The recovery sweep finds work from what is runnable (an input admitted and not promoted), not only
 * from wake flags a claim used to clear: index the pending inputs per session.
 */
export const migration005: Migration = {
  version: 5,
  name: 'pending_inputs',
  up: `
    CREATE INDEX session_input_pending_idx ON session_input (session_id) WHERE promoted_seq IS NULL;
  `,
};
