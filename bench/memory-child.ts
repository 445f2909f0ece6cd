/**
 * The memory figures run here, in a child process started with --expose-gc, so that nothing of the
 * parent run (corpora, connections, earlier sections' garbage) is counted:
 *   node --expose-gc --import tsx bench/memory-child.ts '{"mode":"actors","actors":10000}'
 *   node --expose-gc --import tsx bench/memory-child.ts '{"mode":"replay","file":"x.export","db":"x.db"}'
 * Progress goes to stderr; the last stdout line is `RESULT <json>`.
 */
import { hydrate, type SessionSnapshot } from '../src/machines/decider.ts';
import { openDatabase } from '../src/storage/sqlite/database.ts';
import { migrate } from '../src/storage/sqlite/migrate.ts';
import { replayExport } from '../src/export/replay-export.ts';
import { captureTemplate, cloneTurn, sessionName } from './lib/corpus.ts';
import { fullGc, MB, settle } from './lib/measure.ts';

type Args = { mode: 'actors'; actors: number; turns?: number } | { mode: 'replay'; file: string; db: string; events: number };
const args = JSON.parse(process.argv[2] ?? '{}') as Args;
const err = (line: string) => process.stderr.write(`${line}\n`);
const mem = () => process.memoryUsage();

async function baseline(): Promise<NodeJS.MemoryUsage> {
  if (!fullGc()) throw new Error('memory-child needs node --expose-gc');
  await settle(100);
  fullGc();
  return mem();
}

async function actors(n: number, turns: number) {
  const template = await captureTemplate();
  const eventsOf = (k: number) =>
    Array.from({ length: turns }, (_, t) => cloneTurn(template, k, t))
      .flat()
      .flatMap((b) => b.events);
  // warm up every code path once, then drop it
  for (let k = 0; k < 50; k++) hydrate(sessionName(1_000_000 + k), eventsOf(1_000_000 + k));
  const before = await baseline();
  const actorsMap = new Map<string, SessionSnapshot>();
  let events = 0;
  const t0 = performance.now();
  for (let k = 0; k < n; k++) {
    const evs = eventsOf(k);
    events += evs.length;
    actorsMap.set(sessionName(k), hydrate(sessionName(k), evs));
    if (k % 2000 === 0 && k > 0) err(`hydrated ${k}/${n} sessions, rss ${(mem().rss / MB).toFixed(0)} MB`);
  }
  const ms = performance.now() - t0;
  const after = await baseline();
  const states = new Map<string, number>();
  for (const s of actorsMap.values()) states.set(String(s.value), (states.get(String(s.value)) ?? 0) + 1);
  return {
    actors: actorsMap.size,
    eventsPerActor: events / n,
    hydrateMs: ms,
    baselineRssMb: before.rss / MB,
    rssMb: after.rss / MB,
    rssAboveMb: (after.rss - before.rss) / MB,
    heapAboveMb: (after.heapUsed - before.heapUsed) / MB,
    bytesPerActor: (after.heapUsed - before.heapUsed) / n,
    states: Object.fromEntries(states),
  };
}

async function replay(file: string, dbFile: string, expected: number) {
  const db = openDatabase(dbFile);
  migrate(db);
  const before = await baseline();
  let peak = before.rss;
  let peakHeap = before.heapUsed;
  const sample = () => {
    const m = mem();
    if (m.rss > peak) peak = m.rss;
    if (m.heapUsed > peakHeap) peakHeap = m.heapUsed;
  };
  const timer = setInterval(sample, 10);
  const curve: { phase: string; done: number; rssMb: number }[] = [];
  let nextMark = 0.1;
  const mark = (phase: string, fraction: number, done: number) => {
    if (fraction >= nextMark) {
      nextMark = Math.round((fraction + 0.1) * 10) / 10;
      curve.push({ phase, done, rssMb: Math.round(mem().rss / MB) });
      err(`${phase} ${Math.round(fraction * 100)}%: rss ${(mem().rss / MB).toFixed(0)} MB`);
    }
  };
  const t0 = performance.now();
  // the path `sessiond replay` takes: import and projection in one pass
  const result = await replayExport(db, file, {
    onProgress: (p) => {
      sample();
      mark('replay', p.imported / expected, p.imported);
    },
  });
  const ms = performance.now() - t0;
  clearInterval(timer);
  sample();
  db.close();
  if (result.imported !== expected) throw new Error(`replayed ${result.imported} events, expected ${expected}`);
  return {
    events: result.imported,
    ms,
    baselineRssMb: before.rss / MB,
    peakRssMb: peak / MB,
    peakAboveMb: (peak - before.rss) / MB,
    peakHeapAboveMb: (peakHeap - before.heapUsed) / MB,
    curve,
  };
}

const result = args.mode === 'actors' ? await actors(args.actors, args.turns ?? 2) : await replay(args.file, args.db, args.events);
process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
