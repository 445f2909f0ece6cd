/**
 * The shape of one schema migration, shared by the runner (migrate.ts) and the numbered migrations
 * (migrations/*), which import it from here rather than from the runner that imports them.
 */
import type { Db } from './database.ts';

export interface Migration {
  version: number;
  name: string;
  /** SQL script (may hold several statements) or a function for data migrations. */
  up: string | ((db: Db) => void);
}
