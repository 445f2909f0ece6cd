import type { Migration } from '../migration.ts';

/**
 * Session snapshots: a session's folded state (state value and context) at a sequence, so a cold
 * load reads the snapshot and folds only what follows. `machine` names the machine definition that
 * folded it; a snapshot of another definition is ignored and rebuilt from the log.
 */
export const migration006: Migration = {
  version: 6,
  name: 'session_snapshots',
  up: `
    CREATE TABLE session_snapshot (
      session_id   TEXT PRIMARY KEY,
      seq          INTEGER NOT NULL,
      machine      TEXT NOT NULL,
      data         TEXT NOT NULL,
      time_created INTEGER NOT NULL
    );
  `,
};
