import type { Migration } from '../migration.ts';

/**
 * The rest of the inspector's index beside the log (src/inspector/sqlite-index.ts), so a restarted
 * inspector reads only the log's tail: where its follow of the log stopped (`inspector_follow`, per
 * log name) with every session as it was then (`inspector_head`: the list's row, the tree's links),
 * and the timeline's index in blocks of 4,096 events of a session (`inspector_timeline`: the seqs of
 * each event type and the times; `summary` holds the counts a query needs without the block).
 */
export const migration021: Migration = {
  version: 21,
  name: 'inspector_follow',
  up: `
    CREATE TABLE inspector_follow (
      log      TEXT PRIMARY KEY,
      version  TEXT NOT NULL,
      position INTEGER NOT NULL
    );
    CREATE TABLE inspector_head (
      session_id TEXT PRIMARY KEY,
      data       TEXT NOT NULL
    );
    CREATE TABLE inspector_timeline (
      session_id TEXT NOT NULL,
      block      INTEGER NOT NULL,
      version    TEXT NOT NULL,
      summary    TEXT NOT NULL,
      data       TEXT NOT NULL,
      PRIMARY KEY (session_id, block)
    );
  `,
};
