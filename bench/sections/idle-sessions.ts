/** Memory: a worker that loaded 100,000 sessions once and is now idle (child process, --expose-gc). */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmt } from '../lib/report.ts';
import { runBenchChild } from '../lib/child.ts';
import type { Section } from '../lib/context.ts';

const CHILD = fileURLToPath(new URL('../idle-child.ts', import.meta.url));
const SESSIONS = 100_000;

interface IdleResult {
  sessions: number;
  loadMs: number;
  cached: number;
  cacheSize: number;
  baselineRssMb: number;
  rssMb: number;
  rssAboveMb: number;
  heapAboveMb: number;
}

export const idleSessions: Section = {
  name: 'memory-idle',
  title: 'resident memory of a worker after loading 100,000 sessions once, then idle (child process, --expose-gc)',
  async run(ctx) {
    const S = 'memory-idle';
    const db = join(ctx.tmp, 'idle.db');
    const { events } = await runBenchChild<{ events: number }>(S, CHILD, { mode: 'write', db, sessions: SESSIONS });
    const r = await runBenchChild<IdleResult>(S, CHILD, { mode: 'load', db, sessions: SESSIONS });
    ctx.results.add(
      {
        key: 'memory.idle',
        section: S,
        figure: `RSS after loading ${fmt(r.sessions)} sessions once, idle`,
        unit: 'MB',
        value: r.rssAboveMb,
        note: `above a ${r.baselineRssMb.toFixed(0)} MB baseline after gc; ${fmt(events)} events (one echo turn per session); ${fmt(r.cached)} snapshots cached (cache ${fmt(r.cacheSize)}, least recently used dropped; stored snapshots and the log reload the rest); heap +${r.heapAboveMb.toFixed(1)} MB; loading took ${fmt(r.loadMs)} ms`,
      },
      { max: 150 },
    );
  },
};
