import type { Migration } from '../migration.ts';

/**
 * Blobs beside the log (src/blobs/blob-store.ts): one row per content, named by the SHA-256 of its
 * bytes (hex), written by `SqliteBlobStore` (in the same transaction as an append that references
 * it, once events do). Not part of the projection: a rebuild leaves it alone.
 */
export const migration018: Migration = {
  version: 18,
  name: 'blobs',
  up: `
    CREATE TABLE blob (
      sha256       TEXT PRIMARY KEY NOT NULL CHECK (length(sha256) = 64),
      size         INTEGER NOT NULL,
      media_type   TEXT NOT NULL,
      data         BLOB NOT NULL CHECK (length(data) = size),
      time_created INTEGER NOT NULL
    );
  `,
};
