// What recording streamed text (`text.streamed`, src/execution/stream-recorder.ts) costs a runner,
// on the embedded log. Not part of `npm run bench` (it measures no target):
//
//   node --expose-gc --import tsx bench/streaming.ts
//
// 1. ctx.delta() per call, in alternation: text of a step the turn started (recorded as it streams)
//    and the same text under a message the turn did not start (live only: what every delta cost
//    before). A manual clock: the record timer never fires, so this is the hot path alone.
// 2. A streamed answer in real time (a 6-character delta every 10 ms for 3 s, as a fast model
//    streams): the appends made while it streams and what each took, against STREAM_RECORD_MS.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock, systemClock, type Clock } from '../src/clock.ts';
import type { EventLog } from '../src/events/event-log.ts';
import { SessionExecution } from '../src/execution/session-execution.ts';
import { STREAM_RECORD_MS } from '../src/execution/stream-recorder.ts';
import { admitInput } from '../src/input/admit.ts';
import type { RunContext, Runner } from '../src/runner/types.ts';
import { migrate } from '../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../src/storage/sqlite/sqlite-event-log.ts';
import { openDatabase } from '../src/storage/sqlite/database.ts';
import { fullGc, percentile } from './lib/measure.ts';

const dir = mkdtempSync(join(tmpdir(), 'sessiond-bench-streaming-'));
let files = 0;

/** A turn the bench drives by hand: its context once the step's model request is out. */
async function openTurn(clock: Clock, wrap: (log: EventLog) => EventLog = (l) => l) {
  const db = openDatabase(join(dir, `s${++files}.db`));
  migrate(db);
  const log = wrap(new SqliteEventLog(db));
  let release!: () => void;
  let got!: (ctx: RunContext) => void;
  const ready = new Promise<RunContext>((r) => (got = r));
  const runner: Runner = (ctx) =>
    new Promise<void>((resolve) => {
      release = resolve;
      got(ctx);
    });
  const execution = new SessionExecution({ log, runner, clock });
  await admitInput(execution.handler, 'ses_b', { prompt: 'tell me a long story', wake: false });
  void execution.resume('ses_b');
  const ctx = await ready;
  const close = async () => {
    release();
    await execution.awaitIdle('ses_b');
    await execution.close();
    db.close();
  };
  return { ctx, close };
}

const WORD = 'word, ';
const DELTAS = 200_000;
const PASSES = 5;

async function deltaCost(): Promise<void> {
  const { ctx, close } = await openTurn(new ManualClock(0));
  const best = { recorded: Infinity, live: Infinity };
  const all: { recorded: number[]; live: number[] } = { recorded: [], live: [] };
  for (let pass = 0; pass < PASSES; pass++) {
    for (const kind of ['recorded', 'live'] as const) {
      const { messageId } = await ctx.startStep();
      await ctx.phase('unknown');
      const target = kind === 'recorded' ? messageId : 'msg_not_started';
      fullGc();
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < DELTAS; i++) ctx.delta(target, 'prt_bench', WORD);
      const ns = Number(process.hrtime.bigint() - t0) / DELTAS;
      await ctx.endStep(messageId); // what streamed is dropped with the step (never recorded here)
      all[kind].push(ns);
      best[kind] = Math.min(best[kind], ns);
    }
  }
  await close();
  const f = (n: number) => n.toFixed(0);
  console.log(`ctx.delta, ${DELTAS.toLocaleString('en-US')} calls a pass, best of ${PASSES} in alternation:`);
  console.log(`  live only (a message not started; the cost before recording): ${f(best.live)} ns a delta [${all.live.map(f).join(', ')}]`);
  console.log(`  recorded as it streams:                                        ${f(best.recorded)} ns a delta [${all.recorded.map(f).join(', ')}]`);
  console.log(`  added by recording: ${f(best.recorded - best.live)} ns a delta`);
}

async function streamedAnswer(): Promise<void> {
  const appends: { ms: number; types: string[] }[] = [];
  const timed = (log: EventLog): EventLog =>
    new Proxy(log, {
      get(target, prop, receiver) {
        if (prop === 'append')
          return async (...args: Parameters<EventLog['append']>) => {
            const t0 = performance.now();
            const r = await target.append(...args);
            appends.push({ ms: performance.now() - t0, types: args[2].map((d) => d.type) });
            return r;
          };
        const value = Reflect.get(target, prop, receiver) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  const { ctx, close } = await openTurn(systemClock, timed);
  const { messageId } = await ctx.startStep();
  await ctx.phase('unknown');
  const before = appends.length;
  const t0 = Date.now();
  let deltas = 0;
  while (Date.now() - t0 < 3_000) {
    ctx.delta(messageId, 'prt_bench', WORD);
    deltas++;
    await new Promise((r) => setTimeout(r, 10));
  }
  const during = appends.slice(before);
  await ctx.text(messageId, WORD.repeat(deltas), 'prt_bench');
  await ctx.endStep(messageId);
  await close();
  const ms = during.map((a) => a.ms);
  console.log(
    `a streamed answer: ${deltas} deltas (${deltas * WORD.length} characters) over ${Date.now() - t0} ms: ${during.length} appends while it streamed (${during.map((a) => a.types.join('+')).join(', ')}), every ${STREAM_RECORD_MS} ms; each took p50 ${percentile(ms, 50).toFixed(2)} ms, max ${Math.max(...ms).toFixed(2)} ms (off the runner's path: the stream goes on while it commits)`,
  );
}

try {
  await deltaCost();
  await streamedAnswer();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
