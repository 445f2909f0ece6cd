import type { Migration } from '../migration.ts';

/**
 * The waits of turns (`wait.started`, `wait.resolved`): one row per wait of an execution, open
 * while `outcome` is NULL. The recovery sweep finds due timers and signal timeouts by `until`.
 * And a prompt scheduled for later (`admit(..., { notBefore })`): `not_before` on its input.
 */
export const migration010: Migration = {
  version: 10,
  name: 'waits',
  up: `
    CREATE TABLE session_wait (
      session_id    TEXT NOT NULL,
      execution_id  TEXT NOT NULL,
      kind          TEXT NOT NULL,
      name          TEXT NOT NULL,
      message_id    TEXT,
      call_id       TEXT,
      tool          TEXT,
      until         INTEGER,
      outcome       TEXT,
      time_created  INTEGER NOT NULL,
      time_resolved INTEGER,
      PRIMARY KEY (session_id, execution_id, kind, name)
    );
    CREATE INDEX session_wait_due_idx ON session_wait (until) WHERE outcome IS NULL AND until IS NOT NULL;
    ALTER TABLE session_input ADD COLUMN not_before INTEGER;
  `,
};
