import type { Migration } from '../migration.ts';

/**
 * An index of recoveries by session: every claim clears the session's owed wakes
 * (`UPDATE session_recovery ... WHERE session_id = ?`), which scanned the whole table, a cost that
 * grew with every recovery ever made on any session.
 */
export const migration007: Migration = {
  version: 7,
  name: 'recovery_session_index',
  up: `
    CREATE INDEX session_recovery_session_idx ON session_recovery (session_id);
  `,
};
