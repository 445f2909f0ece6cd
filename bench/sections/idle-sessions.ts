/** Memory: a worker that loaded 100,000 sessions once and is now idle (child process, --expose-gc). */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { say, fmt } from '../lib/report.ts';
import { trackChild } from '../lib/cleanup.ts';
import type { Section } from '../lib/context.ts';

const CHILD = fileURLToPath(new URL('../idle-child.ts', import.meta.url));
const SESSIONS = 100_000;

interface IdleResult { sessions: number; loadMs: number; cached: number; cacheSize: number; baselineRssMb: number; rssMb: number; rssAboveMb: number; heapAboveMb: number }

function runChild<T>(section: string, args: Record<string, unknown>): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = trackChild(spawn(process.execPath, ['--expose-gc', '--import', 'tsx', CHILD, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    let errTail = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d: Buffer) => {
      const text = String(d);
      errTail = (errTail + text).slice(-4000);
      for (const line of text.split('\n')) if (line.trim()) say(section, `  child: ${line.trim()}`);
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      const line = out.split('\n').find((l) => l.startsWith('RESULT '));
      if (code === 0 && line) resolve(JSON.parse(line.slice(7)) as T);
      else reject(new Error(`idle child exited ${code ?? signal}: ${errTail}`));
    });
  });
}

export const idleSessions: Section = {
  name: 'memory-idle',
  title: 'resident memory of a worker after loading 100,000 sessions once, then idle (child process, --expose-gc)',
  async run(ctx) {
    const S = 'memory-idle';
    const db = join(ctx.tmp, 'idle.db');
    const { events } = await runChild<{ events: number }>(S, { mode: 'write', db, sessions: SESSIONS });
    const r = await runChild<IdleResult>(S, { mode: 'load', db, sessions: SESSIONS });
    ctx.results.add({
      key: 'memory.idle', section: S, figure: `RSS after loading ${fmt(r.sessions)} sessions once, idle`, unit: 'MB', value: r.rssAboveMb,
      note: `above a ${r.baselineRssMb.toFixed(0)} MB baseline after gc; ${fmt(events)} events (one echo turn per session); ${fmt(r.cached)} snapshots cached (cache ${fmt(r.cacheSize)}, least recently used dropped; stored snapshots and the log reload the rest); heap +${r.heapAboveMb.toFixed(1)} MB; loading took ${fmt(r.loadMs)} ms`,
    }, { max: 150 });
  },
};
