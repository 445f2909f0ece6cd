/**
 * Cold load: a worker that has never seen a session (restart, cache eviction) loads it. With stored
 * snapshots it reads the latest one and folds only the events after it, so a session of 100,000
 * events should load about as fast as one of 1,000. Each session is written with the echo-turn
 * corpus; a first load stores a snapshot (as a running worker would have), then a few more turns are
 * appended after it, then each pass loads with a fresh CommandHandler (empty cache). Then turns on
 * the long session against turns on a fresh one, in one engine: a turn must not cost more because
 * its session is long.
 */
import { join } from 'node:path';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { SqliteSnapshotStore } from '../../src/storage/sqlite/sqlite-snapshot-store.ts';
import { eventImporter } from '../../src/storage/sqlite/import-events.ts';
import { CommandHandler } from '../../src/execution/command-handler.ts';
import { openEngine } from '../../src/engine.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { systemClock } from '../../src/clock.ts';
import { randomIds } from '../../src/ids.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { cloneTurn, sessionName, type Template } from '../lib/corpus.ts';
import { percentile } from '../lib/measure.ts';
import { say, fmt } from '../lib/report.ts';
import type { Ctx, Section } from '../lib/context.ts';

const AFTER_SNAPSHOT_TURNS = 10;
const TURNS = 40;
const LOADS = 30;

/** The session's events, turn by turn, until at least `events` of them. */
function* sessionEvents(t: Template, k: number, events: number): Generator<SessionEvent[]> {
  let n = 0;
  for (let turn = 0; n < events; turn++) {
    const evs = cloneTurn(t, k, turn).flatMap((b) => b.events);
    n += evs.length;
    yield evs;
  }
}

interface Loaded {
  events: number;
  snapshotSeq: number;
  p50: number;
  samples: number[];
  file: string;
}

async function coldLoads(ctx: Ctx, events: number): Promise<Loaded> {
  const S = 'cold-load';
  const file = join(ctx.tmp, `cold-${events}.db`);
  const db = openDatabase(file);
  migrate(db);
  const log = new SqliteEventLog(db);
  const importer = eventImporter(db);
  const snapshots = new SqliteSnapshotStore(db, systemClock);
  const k = 0;
  const turns = [...sessionEvents(ctx.template, k, events)];
  const cut = turns.length - AFTER_SNAPSHOT_TURNS;
  let written = 0;
  for (const [i, evs] of turns.entries()) {
    if (i === cut) {
      // a worker that ran the session so far has stored a snapshot
      await new CommandHandler(log, systemClock, randomIds, { snapshots }).load(sessionName(k));
    }
    importer(evs);
    written += evs.length;
    if (i % 1000 === 0) say(S, `writing a ${fmt(events)}-event session: ${fmt(written)} events`);
  }
  const snapshotSeq = (await snapshots.get(sessionName(k)))?.context.seq ?? 0;
  const samples: number[] = [];
  for (let i = 0; i < LOADS; i++) {
    const handler = new CommandHandler(log, systemClock, randomIds, { snapshots });
    const t0 = performance.now();
    const snap = await handler.load(sessionName(k));
    samples.push(performance.now() - t0);
    if (snap.context.seq !== written) throw new Error(`cold load reached seq ${snap.context.seq}, the log has ${written}`);
  }
  await log.close();
  db.close();
  return { events: written, snapshotSeq, p50: percentile(samples, 50), samples, file };
}

/** p50 of echo turns (admit to idle) on the long session, and on a fresh session in the same engine. */
async function turnsOnLongSession(file: string, sessionId: string): Promise<{ long: number; fresh: number }> {
  const engine = await openEngine({ file, runner: echoRunner() });
  try {
    const p50 = async (id: string) => {
      const samples: number[] = [];
      for (let i = 0; i < TURNS + 3; i++) {
        const t0 = performance.now();
        await engine.admit(id, { prompt: 'one more turn on this session' });
        await engine.awaitIdle(id);
        if (i >= 3) samples.push(performance.now() - t0); // the first turns load the session
      }
      return percentile(samples, 50);
    };
    const fresh = await p50('ses_fresh');
    const long = await p50(sessionId);
    return { long, fresh };
  } finally {
    await engine.close();
  }
}

export const coldLoad: Section = {
  name: 'cold-load',
  title: 'cold load (fresh worker cache) of a 100,000-event session vs a 1,000-event one, with stored snapshots',
  async run(ctx) {
    const S = 'cold-load';
    const short = await coldLoads(ctx, 1_000);
    say(S, `1,000 events: p50 ${short.p50.toFixed(2)} ms`);
    const long = await coldLoads(ctx, 100_000);
    say(S, `100,000 events: p50 ${long.p50.toFixed(2)} ms`);
    const describe = (l: Loaded) =>
      `${fmt(l.events)} events, snapshot at seq ${fmt(l.snapshotSeq)}; p50 of ${LOADS} cold loads, min ${Math.min(...l.samples).toFixed(2)} ms`;
    ctx.results.add({
      key: 'coldload.short',
      section: S,
      figure: 'cold load of a 1,000-event session, p50',
      unit: 'ms',
      value: short.p50,
      note: describe(short),
    });
    ctx.results.add(
      {
        key: 'coldload.long',
        section: S,
        figure: 'cold load of a 100,000-event session, p50',
        unit: 'ms',
        value: long.p50,
        raw: { label: 'cold load of 1,000 events', value: short.p50, unit: 'ms' },
        note: describe(long),
      },
      { maxRatio: 2 },
    );
    const turns = await turnsOnLongSession(long.file, sessionName(0));
    ctx.results.add({
      key: 'turn.fresh',
      section: S,
      figure: 'echo turn on a fresh session, p50',
      unit: 'ms',
      value: turns.fresh,
      note: `${TURNS} turns, admit to idle, embedded`,
    });
    ctx.results.add(
      {
        key: 'turn.long',
        section: S,
        figure: `echo turn on a ${fmt(long.events)}-event session, p50`,
        unit: 'ms',
        value: turns.long,
        raw: { label: 'echo turn on a fresh session', value: turns.fresh, unit: 'ms' },
        note: `${TURNS} turns, admit to idle, same engine: nothing in the turn path grows with the session's history`,
      },
      { maxRatio: 1.2 },
    );
  },
};
