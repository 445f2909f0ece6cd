import type { Migration } from '../migration.ts';

/**
 * Which session references which blob (src/projector/blob-rows.ts): one row per session and blob
 * hash, written by the projector from the events that carry blob references, deleted with the
 * session. A blob no row names is unreferenced: a delete or the sweep may remove it (src/blobs/reclaim.ts).
 */
export const migration020: Migration = {
  version: 20,
  name: 'session_blobs',
  up: `
    CREATE TABLE session_blob (
      session_id TEXT NOT NULL,
      sha256     TEXT NOT NULL,
      seq        INTEGER NOT NULL,
      PRIMARY KEY (session_id, sha256)
    ) WITHOUT ROWID;
    CREATE INDEX session_blob_by_sha256 ON session_blob (sha256);
  `,
};
