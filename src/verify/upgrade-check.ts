/**
 * A database of an older schema, upgraded as this version would (on a copy): the file itself is
 * only read. Its pages are copied to a temporary file (SQLite's backup), the copy is migrated to
 * this version's schema, and its log is compared with the original's row by row: the upgrade must
 * succeed and keep every event byte for byte.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { messageOf } from '../errors.ts';
import { migrate } from '../storage/sqlite/migrate.ts';
import { LATEST_SCHEMA_VERSION } from '../storage/sqlite/migrations/index.ts';
import { openDatabase, type Db } from '../storage/sqlite/database.ts';
import type { LogProblem } from './stored-log.ts';
import { type EventRow, storedEvents } from '../storage/sqlite/event-rows.ts';

const EVENT_COLUMNS = ['position', 'id', 'aggregate_id', 'seq', 'type', 'version', 'time', 'data'] as const;
const PAGE = 1000;

/** The schema version a database records (read-only: nothing is created). */
export function storedSchemaVersion(db: Db): number {
  const tracked = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get() !== undefined;
  return tracked ? (db.prepare('SELECT COALESCE(MAX(version), 0) FROM schema_migrations').pluck().get() as number) : 0;
}

const hasColumn = (db: Db, table: string, column: string) =>
  (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).some((c) => c.name === column);

/**
 * The first event that differs between the two logs, in words; undefined when they are the same.
 * Compared per event whichever layout each file has (event-rows.ts), the payload byte for byte.
 */
export function firstChangedEvent(before: Db, after: Db): string | undefined {
  const names: readonly (keyof EventRow)[] =
    before.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'event'").get() !== undefined && !hasColumn(before, 'event', 'committed_at')
      ? EVENT_COLUMNS
      : [...EVENT_COLUMNS, 'committed_at'];
  const a = storedEvents(before);
  const b = storedEvents(after);
  for (let at = 0; ; ) {
    const xs = a.after(at, PAGE);
    const ys = b.after(at, PAGE);
    for (let k = 0; k < Math.max(xs.length, ys.length); k++) {
      const x = xs[k];
      const y = ys[k];
      if (x === undefined) return `the upgraded log has an event at position ${y!.position} the original lacks`;
      if (y === undefined) return `the upgraded log lost the event at position ${x.position}`;
      const changed = names.find((n) => {
        const l = x[n] ?? null;
        const r = y[n] ?? null;
        return l instanceof Uint8Array && r instanceof Uint8Array ? !Buffer.from(l).equals(Buffer.from(r)) : l !== r;
      });
      if (changed) return `the upgrade changes the event at position ${x.position} (its ${changed})`;
    }
    if (xs.length < PAGE && ys.length < PAGE) return undefined;
    at = Math.min(xs[xs.length - 1]?.position ?? Number.POSITIVE_INFINITY, ys[ys.length - 1]?.position ?? Number.POSITIVE_INFINITY);
  }
}

export interface UpgradeCheck {
  version: number;
  notes: string[];
  problems: LogProblem[];
  /**
   * The projection this version would go on from: the file's own at this version's schema, the
   * migrated copy's after an upgrade that keeps it; none when the upgrade empties it (it is folded
   * again from the log) or fails.
   */
  projectionDb: Db | undefined;
  /** Closes and removes the temporary copy. */
  close(): void;
}

const checkpointOf = (db: Db) =>
  db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'projector_checkpoint'").get() === undefined
    ? undefined
    : (db.prepare('SELECT COALESCE(MAX(position), 0) FROM projector_checkpoint').pluck().get() as number);

/** `describe`: the file, for the notes. A database at this version's schema is read as it is. */
export async function checkUpgrade(db: Db, describe: string): Promise<UpgradeCheck> {
  const version = storedSchemaVersion(db);
  if (version >= LATEST_SCHEMA_VERSION) {
    return {
      version,
      notes: [`read ${describe} read-only, in place (schema ${version}, this version's)`],
      problems: [],
      projectionDb: db,
      close: () => undefined,
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'sessiond-verify-'));
  const file = join(dir, 'upgrade-copy.db');
  const older = `${describe} is at schema ${version}, older than this version's ${LATEST_SCHEMA_VERSION}: read it read-only in place`;
  let copy: Db | undefined;
  const close = () => {
    copy?.close();
    rmSync(dir, { recursive: true, force: true });
  };
  const result = (notes: string[], problems: LogProblem[], projectionDb: Db | undefined): UpgradeCheck => ({ version, notes, problems, projectionDb, close });
  try {
    await db.backup(file);
    copy = openDatabase(file);
    try {
      migrate(copy);
    } catch (err) {
      return result([`${older}; a temporary copy could not be migrated`], [{ kind: 'upgrade_fails', reason: messageOf(err) }], undefined);
    }
    const changed = firstChangedEvent(db, copy);
    if (changed) return result([`${older}; migrated a temporary copy`], [{ kind: 'upgrade_fails', reason: changed }], undefined);
    const events = storedEvents(copy).count();
    const notes = [
      `${older}, and migrated a temporary copy to schema ${LATEST_SCHEMA_VERSION}: the upgrade succeeds and keeps all ${events.toLocaleString('en-US')} events byte for byte (the file itself was not changed)`,
    ];
    const before = checkpointOf(db);
    if ((before ?? 1) > 0 && checkpointOf(copy) === 0) {
      notes.push(`the upgrade empties the projection (this version folds it again from the log), so the stored one was not compared`);
      return result(notes, [], undefined);
    }
    return result(notes, [], copy);
  } catch (err) {
    close();
    throw err;
  }
}
