import type { Migration } from '../migration.ts';

/**
 * A session's owner (sessions/owner.ts) on its list row, so a gateway grant's page holds only the
 * sessions it reaches. NULL: no owner (every session before owners existed had none).
 */
export const migration014: Migration = {
  version: 14,
  name: 'session_owner',
  up: `
    ALTER TABLE session ADD COLUMN owned_by TEXT;
  `,
};
