/** Databases for the verify tests: the committed fixtures, upgraded or not, and one verified as the CLI opens it. */
import { cliContext } from '../../src/cli/context.ts';
import type { LogOptions } from '../../src/cli/log-options.ts';
import { openVerifySource } from '../../src/cli/verify-source.ts';
import { hydrate } from '../../src/machines/decider.ts';
import { MACHINE_VERSION } from '../../src/machines/snapshot-store.ts';
import { catchUpProjection } from '../../src/projector/catch-up.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import type { Db } from '../../src/storage/sqlite/database.ts';
import type { VerifyReport } from '../../src/verify/problems.ts';
import { verifyLog, type VerifyOptions } from '../../src/verify/verify-log.ts';
import { loadSchemaFixture, schemaFixtures } from '../support/schema-fixtures.ts';

/** The fixture the tests tamper with (schema 10: waits, drops, a recovery; its counts and sequences are spelled in the tests). */
export const tamperedFixture = () => schemaFixtures().find((f) => f.version === 10)!;

/**
 * The schema 10 fixture upgraded to this version's schema, its projection folded to the log's head
 * and its snapshots stored again by this version's fold (as a worker of this version leaves it): a
 * database this version reads the same, whatever machine version the fixture's snapshots carry.
 * `tamper` changes it before it is closed.
 */
export async function currentDb(file: string, tamper: (db: Db) => void = () => undefined): Promise<void> {
  const db = loadSchemaFixture(tamperedFixture(), file);
  migrate(db);
  const log = new SqliteEventLog(db);
  await catchUpProjection(db, log);
  const restore = db.prepare('UPDATE session_snapshot SET seq = ?, machine = ?, data = ? WHERE session_id = ?');
  for (const id of db.prepare('SELECT session_id FROM session_snapshot').pluck().all() as string[]) {
    const snapshot = hydrate(id, await log.readSession(id));
    restore.run(snapshot.context.seq, MACHINE_VERSION, JSON.stringify(snapshot), id);
  }
  await log.close();
  tamper(db);
  db.close();
}

/** Verifies a database file as `sessiond verify FILE` opens it (read-only; an older schema on a migrated copy). */
export async function verifyFile(file: string, options: VerifyOptions = {}): Promise<VerifyReport> {
  const source = await openVerifySource(file, { db: file } as LogOptions, cliContext({}));
  try {
    return await verifyLog(source, options);
  } finally {
    await source.close();
  }
}

/** The session's problems as `kind@seq`. */
export const problemsOf = (report: VerifyReport, sessionId: string) =>
  (report.differing.find((s) => s.sessionId === sessionId)?.problems ?? []).map((p) => `${p.kind}@${p.seq}`);
