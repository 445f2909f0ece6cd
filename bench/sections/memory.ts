/** Memory: hydrated session actors held in a Map, and peak memory while replaying a large export. */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeExportCorpus } from '../lib/export-corpus.ts';
import { say, ticker, fmt } from '../lib/report.ts';
import { runBenchChild } from '../lib/child.ts';
import type { Section } from '../lib/context.ts';

const CHILD = fileURLToPath(new URL('../memory-child.ts', import.meta.url));

/** Runs memory-child.ts with --expose-gc and returns its RESULT. */
export function runMemoryChild<T>(section: string, args: Record<string, unknown>): Promise<T> {
  return runBenchChild<T>(section, CHILD, args);
}

interface ActorsResult {
  actors: number;
  eventsPerActor: number;
  hydrateMs: number;
  baselineRssMb: number;
  rssMb: number;
  rssAboveMb: number;
  heapAboveMb: number;
  bytesPerActor: number;
  states: Record<string, number>;
}
interface ReplayResult {
  events: number;
  ms: number;
  baselineRssMb: number;
  peakRssMb: number;
  peakAboveMb: number;
  peakHeapAboveMb: number;
  curve: { phase: string; done: number; rssMb: number }[];
}

export const memoryActors: Section = {
  name: 'memory-actors',
  title: 'resident memory of 10,000 hydrated session actors (child process, --expose-gc)',
  async run(ctx) {
    const S = 'memory-actors';
    const r = await runMemoryChild<ActorsResult>(S, { mode: 'actors', actors: ctx.sizes.actors, turns: 2 });
    ctx.results.add(
      {
        key: 'memory.actors',
        section: S,
        figure: `RSS for ${fmt(r.actors)} hydrated session actors`,
        unit: 'MB',
        value: r.rssAboveMb,
        note: `above a ${r.baselineRssMb.toFixed(0)} MB baseline after gc; ${r.eventsPerActor} events (2 echo turns) per session folded with hydrate(); heap +${r.heapAboveMb.toFixed(1)} MB = ${fmt(r.bytesPerActor)} bytes/actor; states ${JSON.stringify(r.states)}; hydrate took ${fmt(r.hydrateMs)} ms`,
      },
      { max: 100 },
    );
    ctx.results.add({
      key: 'hydrate.rate',
      section: S,
      figure: 'hydrate (fold events into a snapshot)',
      unit: 'events/s',
      value: (r.actors * r.eventsPerActor * 1000) / r.hydrateMs,
      note: `${fmt(r.actors)} sessions x ${r.eventsPerActor} events through hydrate() (XState transition per event), including cloning the events; informational`,
    });
  },
};

export const memoryReplay: Section = {
  name: 'memory-replay',
  title: 'peak memory while replaying a large export into a fresh database (child process)',
  async run(ctx) {
    const S = 'memory-replay';
    const n = ctx.sizes.memoryReplayEvents;
    const file = join(ctx.tmp, 'memory.export');
    const tick = ticker(2000);
    await writeExportCorpus(ctx.template, file, n, (done) => tick(() => say(S, `writing the export: ${fmt(done)}/${fmt(n)} events`)));
    say(S, `export of ${fmt(n)} events written${ctx.full ? '' : ' (quick run: fewer than 1,000,000; --full uses 1M)'}`);
    const r = await runMemoryChild<ReplayResult>(S, { mode: 'replay', file, db: join(ctx.tmp, 'memory.db'), events: n });
    const curve = r.curve.map((c) => `${c.phase}@${fmt(c.done)}:${c.rssMb}`).join(' ');
    ctx.results.add(
      {
        key: 'memory.replay.peak',
        section: S,
        figure: `peak RSS replaying ${fmt(r.events)} events`,
        unit: 'MB',
        value: r.peakAboveMb,
        note: `above a ${r.baselineRssMb.toFixed(0)} MB baseline (absolute peak ${r.peakRssMb.toFixed(0)} MB); replayExport (import + projection, one pass) in ${fmt(r.ms)} ms; RSS curve (MB) ${curve}${ctx.full ? '' : '; quick run uses fewer than 1M events'}`,
      },
      { max: 200 },
    );
  },
};
