/**
 * Numbered migrations, applied in order, each in its own IMMEDIATE transaction and recorded in
 * `schema_migrations`. Re-running is a no-op; two processes migrating at once serialize on the
 * write lock and the second finds nothing to do. A database written by a newer build is refused.
 * A failed migration rolls back and leaves the database at the last good version.
 */
import { ErrorCode, SessiondError, messageOf } from '../../errors.ts';
import type { Clock } from '../../clock.ts';
import { systemClock } from '../../clock.ts';
import { migrations as builtIn } from './migrations/index.ts';
import type { Migration } from './migration.ts';
import type { Db } from './database.ts';

export type { Migration, MigrationProgress } from './migration.ts';

export interface MigrateResult {
  from: number;
  to: number;
  applied: { version: number; name: string }[];
}

export function schemaVersion(db: Db): number {
  ensureTable(db);
  const row = db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null };
  return row.v ?? 0;
}

function ensureTable(db: Db): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at INTEGER NOT NULL
  )`);
}

function checkList(list: readonly Migration[]): void {
  list.forEach((m, i) => {
    if (m.version !== i + 1) {
      throw new SessiondError(ErrorCode.InvalidOption, `Migration list is out of order: entry ${i} (${m.name}) has version ${m.version}, expected ${i + 1}.`);
    }
  });
}

/** A data migration over fewer rows says nothing of how far it got. */
export const PROGRESS_FROM_ROWS = 10_000;

export interface MigrateOptions {
  migrations?: readonly Migration[];
  target?: number;
  clock?: Clock;
  /**
   * How far a long data migration got (rows done of total), as it goes: for a progress line on a
   * large file. Only for migrations of `PROGRESS_FROM_ROWS` rows or more (the rest take well under a second).
   */
  onProgress?: (migration: { version: number; name: string }, done: number, total: number) => void;
}

/** Applies every pending migration (up to `target` when given). */
export function migrate(db: Db, options: MigrateOptions = {}): MigrateResult {
  const list = options.migrations ?? builtIn;
  const clock = options.clock ?? systemClock;
  checkList(list);
  const latest = list.length;
  const target = options.target ?? latest;
  const from = schemaVersion(db);
  if (from > latest) {
    throw new SessiondError(
      ErrorCode.SchemaTooNew,
      `Database schema is at version ${from}, but this sessiond knows versions up to ${latest}. It was written by a newer sessiond: upgrade sessiond, or use a fresh database.`,
      { details: { found: from, supported: latest } },
    );
  }
  const applied: MigrateResult['applied'] = [];
  for (const m of list) {
    if (m.version > target) break;
    const step = db.transaction(() => {
      const current = schemaVersion(db);
      if (current >= m.version) return false; // another process got here first
      if (typeof m.up === 'string') db.exec(m.up);
      else
        m.up(db, (done, total) => {
          if (total >= PROGRESS_FROM_ROWS) options.onProgress?.({ version: m.version, name: m.name }, done, total);
        });
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(m.version, m.name, clock.now());
      return true;
    });
    try {
      if (step.immediate()) applied.push({ version: m.version, name: m.name });
    } catch (err) {
      throw new SessiondError(
        ErrorCode.MigrationFailed,
        `Migration ${m.version} (${m.name}) failed and was rolled back; the database stays at version ${schemaVersion(db)}. Cause: ${messageOf(err)}`,
        { cause: err, details: { version: m.version, name: m.name } },
      );
    }
  }
  return { from, to: schemaVersion(db), applied };
}
