/**
 * Full turns: admit (wakes) -> claim -> 3 echo steps -> settle, on a worker as `sessiond start` runs
 * it (startSessiond: the engine, the projector following the log, the recovery sweep; on NATS also
 * every commit published live), with 64 sessions at once (throughput) and one session alone
 * (latency), embedded and on NATS. The engine's own ceiling, without the worker's parts, is
 * turn-ceiling.ts.
 */
import { join } from 'node:path';
import type { Engine } from '../../src/engine.ts';
import { startSessiond, type Sessiond, type SessiondOptions } from '../../src/host.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { WORKER } from '../../src/testing/nats-server.ts';
import { BENCH_PROMPT } from '../lib/corpus.ts';
import { percentile, perSecond } from '../lib/measure.ts';
import { say, ticker, fmt } from '../lib/report.ts';
import { CONCURRENCY, type Ctx, type Section } from '../lib/context.ts';
import { onCleanup } from '../lib/cleanup.ts';
import { freshEventStream } from './logs.ts';

/** One full echo turn of a session: admitted (which wakes it), then run to idle. */
export async function turn(engine: Engine, sessionId: string): Promise<void> {
  await engine.admit(sessionId, { prompt: BENCH_PROMPT });
  await engine.awaitIdle(sessionId);
}

async function measure(ctx: Ctx, S: string, label: string, keyBase: string, engine: Engine, rounds: number): Promise<void> {
  const sessions = Array.from({ length: CONCURRENCY }, (_, k) => `ses_t${k}`);
  // warm up: one turn per session (first claims, caches)
  await Promise.all(sessions.map((s) => turn(engine, s)));
  let done = 0;
  const total = rounds * CONCURRENCY;
  const tick = ticker();
  const seqBefore = await Promise.all(sessions.map((s) => engine.log.lastSeq(s)));
  const t0 = performance.now();
  await Promise.all(
    sessions.map(async (s) => {
      for (let r = 0; r < rounds; r++) {
        await turn(engine, s);
        done++;
        tick(() => say(S, `${label}: ${fmt(done)}/${fmt(total)} turns`));
      }
    }),
  );
  const ms = performance.now() - t0;
  const seqAfter = await Promise.all(sessions.map((s) => engine.log.lastSeq(s)));
  const events = seqAfter.reduce((sum, v, i) => sum + v - seqBefore[i]!, 0);
  const perTurn = events / total;
  ctx.results.add({
    key: `${keyBase}.turns`,
    section: S,
    figure: `full turns, ${CONCURRENCY} sessions at once (${label})`,
    unit: 'turns/s',
    value: perSecond(total, ms),
    note: `${fmt(total)} turns (admit+wake, claim, 3 echo steps, settle; echo without delay); ${perTurn.toFixed(1)} events per turn, ${fmt(perSecond(events, ms))} events/s`,
  });

  const alone = 'ses_alone';
  await turn(engine, alone);
  const samples: number[] = [];
  for (let i = 0; i < ctx.sizes.latencyTurns; i++) {
    const t = performance.now();
    await turn(engine, alone);
    samples.push(performance.now() - t);
  }
  const tenth = Math.max(1, Math.floor(samples.length / 10));
  ctx.results.add({
    key: `${keyBase}.latency.p50`,
    section: S,
    figure: `one turn alone, p50 (${label})`,
    unit: 'ms',
    value: percentile(samples, 50),
    note: `${samples.length} turns of one session, one after another, admit to idle; p50 of the first ${tenth} turns ${percentile(samples.slice(0, tenth), 50).toFixed(1)} ms, of the last ${tenth} ${percentile(samples.slice(-tenth), 50).toFixed(1)} ms (growth = cost that rises with the session's length)`,
  });
  ctx.results.add({
    key: `${keyBase}.latency.p99`,
    section: S,
    figure: `one turn alone, p99 (${label})`,
    unit: 'ms',
    value: percentile(samples, 99),
  });
}

/** Runs `measure` on a worker started from `options`, closed afterwards (also when the bench is interrupted). */
async function onWorker(ctx: Ctx, S: string, label: string, keyBase: string, rounds: number, options: SessiondOptions): Promise<void> {
  const host: Sessiond = await startSessiond(options);
  const release = onCleanup(`${label} worker`, async () => {
    await host.close();
  });
  try {
    await measure(ctx, S, label, keyBase, host.engine, rounds);
  } finally {
    release();
    await host.close();
  }
}

export const turnsEmbedded: Section = {
  name: 'turns-embedded',
  title: 'full turns per second and latency, embedded (a worker on a SQLite file)',
  async run(ctx) {
    await onWorker(ctx, 'turns-embedded', 'embedded', 'turns.embedded', ctx.sizes.turnRounds, { db: join(ctx.tmp, 'turns.db'), runner: echoRunner() });
  },
};

export const turnsNats: Section = {
  name: 'turns-nats',
  title: 'full turns per second and latency, on NATS (a worker on the JetStream log, commits published live)',
  async run(ctx) {
    const server = await ctx.nats();
    await freshEventStream(server);
    try {
      await onWorker(ctx, 'turns-nats', 'NATS', 'turns.nats', ctx.sizes.natsTurnRounds, {
        db: join(ctx.tmp, 'turns-nats.db'),
        runner: echoRunner(),
        nats: { connection: { servers: server.url, ...WORKER, name: 'bench-worker' } },
      });
    } finally {
      await freshEventStream(server);
    }
  },
};
