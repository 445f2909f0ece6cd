import type { Migration } from '../migration.ts';

/**
 * The inspector's index beside the log (src/inspector/sqlite-index.ts): a machine snapshot every
 * 1,000 events of a session and its conversation marks, written as the inspector follows the log,
 * so a restarted inspector starts every view from them instead of folding the whole log again.
 * `version` names the folds that made a row; a row of another one is ignored.
 */
export const migration019: Migration = {
  version: 19,
  name: 'inspector_index',
  up: `
    CREATE TABLE inspector_checkpoint (
      session_id TEXT NOT NULL,
      seq        INTEGER NOT NULL,
      version    TEXT NOT NULL,
      data       TEXT NOT NULL,
      PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID;
    CREATE TABLE inspector_mark (
      session_id TEXT NOT NULL,
      seq        INTEGER NOT NULL,
      version    TEXT NOT NULL,
      data       TEXT NOT NULL,
      PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID;
  `,
};
