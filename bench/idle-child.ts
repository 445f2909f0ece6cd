/**
 * Memory of a worker that has loaded many sessions once and then sits idle, run in a child started
 * with --expose-gc so nothing of the parent run is counted:
 *   node --expose-gc --import tsx bench/idle-child.ts '{"mode":"write","db":"x.db","sessions":100000}'
 *   node --expose-gc --import tsx bench/idle-child.ts '{"mode":"load","db":"x.db","sessions":100000}'
 * The first fills the database with one echo turn per session (not measured); in a second, fresh
 * process (so the writing's high-water mark is not in the baseline) a CommandHandler with
 * the stored-snapshot store loads every session once (as a worker's start-up scan or a status
 * sweep would). Its cache keeps the most recently used snapshots (DEFAULT_SNAPSHOT_CACHE) and
 * drops the rest; a later load of a dropped session reads its stored snapshot or folds its log.
 * Progress goes to stderr; the last stdout line is `RESULT <json>`.
 */
import { openDatabase } from '../src/storage/sqlite/database.ts';
import { migrate } from '../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../src/storage/sqlite/sqlite-event-log.ts';
import { SqliteSnapshotStore } from '../src/storage/sqlite/sqlite-snapshot-store.ts';
import { eventImporter } from '../src/storage/sqlite/import-events.ts';
import { CommandHandler, DEFAULT_SNAPSHOT_CACHE } from '../src/execution/command-handler.ts';
import { systemClock } from '../src/clock.ts';
import { randomIds } from '../src/ids.ts';
import { captureTemplate, corpus, pages, sessionName } from './lib/corpus.ts';
import { fullGc, MB, settle } from './lib/measure.ts';

const args = JSON.parse(process.argv[2] ?? '{}') as { mode: 'write' | 'load'; db: string; sessions: number };
const err = (line: string) => process.stderr.write(`${line}\n`);

async function baseline(): Promise<NodeJS.MemoryUsage> {
  if (!fullGc()) throw new Error('idle-child needs node --expose-gc');
  await settle(100);
  fullGc();
  return process.memoryUsage();
}

const db = openDatabase(args.db);
migrate(db);
const log = new SqliteEventLog(db);
if (args.mode === 'write') {
  const importer = eventImporter(db);
  const template = await captureTemplate();
  let written = 0;
  for (const page of pages(
    (function* () {
      for (const b of corpus(template, { sessions: args.sessions, turns: 1 })) yield b.events;
    })(),
    20_000,
  )) {
    importer(page);
    written += page.length;
    if (written % 300_000 < page.length) err(`writing: ${written} events`);
  }
  await log.close();
  db.close();
  process.stdout.write(`RESULT ${JSON.stringify({ events: written })}\n`);
} else {
  const handler = new CommandHandler(log, systemClock, randomIds, { snapshots: new SqliteSnapshotStore(db, systemClock) });
  // warm every code path on a few sessions, then drop that handler
  const warm = new CommandHandler(log, systemClock, randomIds);
  for (let k = 0; k < 100; k++) await warm.load(sessionName(k));
  const before = await baseline();
  const t0 = performance.now();
  for (let k = 0; k < args.sessions; k++) {
    await handler.load(sessionName(k));
    if (k % 20_000 === 0 && k > 0) err(`loaded ${k}/${args.sessions} sessions, rss ${(process.memoryUsage().rss / MB).toFixed(0)} MB`);
  }
  const ms = performance.now() - t0;
  const after = await baseline();
  let cached = 0;
  for (let k = 0; k < args.sessions; k++) if (handler.cached(sessionName(k))) cached++;
  await log.close();
  db.close();
  process.stdout.write(
    `RESULT ${JSON.stringify({
      sessions: args.sessions,
      loadMs: ms,
      cached,
      cacheSize: DEFAULT_SNAPSHOT_CACHE,
      baselineRssMb: before.rss / MB,
      rssMb: after.rss / MB,
      rssAboveMb: (after.rss - before.rss) / MB,
      heapAboveMb: (after.heapUsed - before.heapUsed) / MB,
    })}\n`,
  );
}
