/**
 * The turn ceiling: what a turn must cost at least, next to a sessiond turn of the same shape.
 *
 * Raw: a "turn" is 3 single-row transactions of ~100-byte payloads (the writes a turn must make:
 * its start, a durable tool journal, its end), 64 turns in flight at once (each transaction
 * followed by a yield to the event loop, as concurrent sessions would), on SQLite with
 * synchronous NORMAL and FULL. sessiond: a turn is admit -> claim -> one step with three durable
 * tool calls returning ~100 bytes -> settle -> idle, 64 sessions at once, on the same two settings.
 * CPU per turn is the process's user+system time over the turns. Each pair runs in alternation.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openEngine } from '../../src/engine.ts';
import type { Runner } from '../../src/runner/types.ts';
import { interleaved, spread } from '../lib/measure.ts';
import { say, ticker, fmt } from '../lib/report.ts';
import { CONCURRENCY, type Ctx, type Section } from '../lib/context.ts';

const PAYLOAD = Buffer.alloc(100, 0x61);
const OUTPUT = 'x'.repeat(100);
const yieldLoop = () => new Promise<void>((r) => setImmediate(r));

/** One step with three durable tool calls, each returning ~100 bytes. */
const toolTurn: Runner = async (ctx) => {
  const { messageId } = await ctx.startStep();
  for (let k = 0; k < 3; k++) await ctx.tool(messageId, { name: 'lookup', input: { k }, durable: true }, async () => OUTPUT);
  await ctx.endStep(messageId, 'stop');
};

interface Pass { count: number; ms: number; cpuMs: number }

async function rawPass(ctx: Ctx, sync: 'NORMAL' | 'FULL', turns: number, pass: number): Promise<Pass> {
  const db = new Database(join(ctx.tmp, `ceiling-${sync}-${pass}.db`));
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${sync}`);
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT NOT NULL, seq INTEGER NOT NULL, data BLOB NOT NULL)');
  const insert = db.prepare('INSERT INTO t (k, seq, data) VALUES (?, ?, ?)');
  const write = db.transaction((k: string, seq: number) => insert.run(k, seq, PAYLOAD));
  const per = Math.ceil(turns / CONCURRENCY);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, async (_, s) => {
    for (let r = 0; r < per; r++) {
      for (let j = 0; j < 3; j++) { write.immediate(`s${s}`, r * 3 + j); await yieldLoop(); }
    }
  }));
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  db.close();
  return { count: per * CONCURRENCY, ms, cpuMs: (cpu.user + cpu.system) / 1000 };
}

async function sessiondPass(ctx: Ctx, sync: 'NORMAL' | 'FULL', turns: number, pass: number, S: string): Promise<Pass> {
  const engine = await openEngine({ file: join(ctx.tmp, `ceiling-engine-${sync}-${pass}.db`), runner: toolTurn, synchronous: sync });
  try {
    const sessions = Array.from({ length: CONCURRENCY }, (_, k) => `ses_c${k}`);
    const turn = async (s: string) => { await engine.admit(s, { prompt: 'look three things up' }); await engine.awaitIdle(s); };
    await Promise.all(sessions.map(turn)); // warm up
    const per = Math.ceil(turns / CONCURRENCY);
    let done = 0;
    const tick = ticker();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(sessions.map(async (s) => {
      for (let r = 0; r < per; r++) {
        await turn(s);
        done++;
        tick(() => say(S, `sessiond ${sync}: ${fmt(done)}/${fmt(per * CONCURRENCY)} turns`));
      }
    }));
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    return { count: per * CONCURRENCY, ms, cpuMs: (cpu.user + cpu.system) / 1000 };
  } finally {
    await engine.close();
  }
}

export const turnCeiling: Section = {
  name: 'turn-ceiling',
  title: 'the raw turn ceiling (3 one-row transactions per turn, 64 at once, NORMAL and FULL) next to a sessiond turn of that shape (one step, three durable tool calls)',
  async run(ctx) {
    const S = 'turn-ceiling';
    const turns = ctx.sizes.turnRounds * CONCURRENCY * 4;
    for (const [sync, minRatio] of [['NORMAL', 0.35], ['FULL', 0.4]] as const) {
      const cpu = { raw: Infinity, sessiond: Infinity };
      const [raw, ours] = await interleaved(ctx.sizes.passes, [
        async (i) => { const p = await rawPass(ctx, sync, turns * 4, i); cpu.raw = Math.min(cpu.raw, p.cpuMs / p.count); return p; },
        async (i) => { const p = await sessiondPass(ctx, sync, turns, i, S); cpu.sessiond = Math.min(cpu.sessiond, p.cpuMs / p.count); return p; },
      ]);
      const key = `turn.embedded.${sync.toLowerCase()}`;
      ctx.results.add({
        key: `raw.turn.${sync.toLowerCase()}`, section: S, figure: `raw turn ceiling (3 one-row txns, ${CONCURRENCY} at once, ${sync})`, unit: 'turns/s', value: raw!.best,
        note: `CPU ${cpu.raw.toFixed(3)} ms per raw turn; ${spread(raw!)}`,
      });
      ctx.results.add({
        key, section: S, figure: `sessiond turns, one step + 3 durable tools, ${CONCURRENCY} sessions (${sync})`, unit: 'turns/s', value: ours!.best,
        raw: { label: `raw turn ceiling (${sync})`, value: raw!.best, unit: 'turns/s' },
        note: `CPU ${cpu.sessiond.toFixed(2)} ms per turn (${(cpu.sessiond / cpu.raw).toFixed(1)} x the raw turn's; target <= 4 x); ${spread(ours!)}`,
      }, { minRatio });
    }
  },
};
