/**
 * The shape of one schema migration, shared by the runner (migrate.ts) and the numbered migrations
 * (migrations/*), which import it from here rather than from the runner that imports them.
 */
import type { Db } from './database.ts';

/** How far a long data migration got: `done` of `total` rows (called as it goes, from 0 to `total`). */
export type MigrationProgress = (done: number, total: number) => void;

export interface Migration {
  version: number;
  name: string;
  /** SQL script (may hold several statements) or a function for data migrations (which may say how far it got). */
  up: string | ((db: Db, progress: MigrationProgress) => void);
}
