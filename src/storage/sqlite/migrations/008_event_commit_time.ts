import type { Migration } from '../migration.ts';

/**
 * When each event was committed (ms since the epoch, the writer's clock at the commit), beside
 * `time`, when it was decided: a write decided under a live lease that lands after the lease expired
 * is visible to the audit. NULL for events committed before this migration.
 */
export const migration008: Migration = {
  version: 8,
  name: 'event_commit_time',
  up: `
    ALTER TABLE event ADD COLUMN committed_at INTEGER;
  `,
};
