/**
 * The turn ceiling: what a turn must cost at least, next to a sessiond turn of the same shape.
 *
 * Raw: a "turn" is 3 single-row transactions of ~100-byte payloads (the writes a turn must make:
 * its start, a durable tool journal, its end), 64 turns in flight at once (each transaction
 * followed by a yield to the event loop, as concurrent sessions would), on SQLite with
 * synchronous NORMAL and FULL. sessiond: a turn is admit -> claim -> one step with three durable
 * tool calls returning ~100 bytes -> settle -> idle, 64 sessions at once, on the same two settings.
 * CPU per turn is the process's user+system time over the turns. Each pair runs in alternation.
 * One turn alone: p50 of the raw turn's 3 transactions one after another, and of a sessiond turn
 * alone, admit to idle. On JetStream: a raw turn is 3 OCC publishes (expected last subject sequence)
 * awaited in sequence, ~100-byte payloads, 64 subjects at once; sessiond runs the same tool turn with
 * a JetStreamEventLog; and each alone. Beside the bare engine, the whole worker (`startSessiond`, what
 * `sessiond start` runs: the engine, its log subscription, the projector, the recovery sweep, and on
 * NATS the live publishing and the snapshot stream) runs the same turns in the same alternation.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openEngine, type Engine } from '../../src/engine.ts';
import { startSessiond } from '../../src/host.ts';
import { setupStreams, WORKER } from '../../src/testing/nats-server.ts';
import type { EventLog } from '../../src/events/event-log.ts';
import type { Runner } from '../../src/runner/types.ts';
import { interleaved, percentile, spread } from '../lib/measure.ts';
import { onCleanup } from '../lib/cleanup.ts';
import { rawJetStream } from './raw.ts';
import { freshEventStream, openJsLog } from './logs.ts';
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

interface Pass {
  count: number;
  ms: number;
  cpuMs: number;
}

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
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, s) => {
      for (let r = 0; r < per; r++) {
        for (let j = 0; j < 3; j++) {
          write.immediate(`s${s}`, r * 3 + j);
          await yieldLoop();
        }
      }
    }),
  );
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  db.close();
  return { count: per * CONCURRENCY, ms, cpuMs: (cpu.user + cpu.system) / 1000 };
}

const turnOf = (engine: Engine) => async (s: string) => {
  await engine.admit(s, { prompt: 'look three things up' });
  await engine.awaitIdle(s);
};

/** 64 sessions, `turns` tool turns in all; the engine is opened and closed around the pass. */
async function sessiondPass(open: Open, turns: number, S: string, label: string): Promise<Pass> {
  const { engine, close } = await open();
  try {
    const sessions = Array.from({ length: CONCURRENCY }, (_, k) => `ses_c${k}`);
    const turn = turnOf(engine);
    await Promise.all(sessions.map(turn)); // warm up
    const per = Math.ceil(turns / CONCURRENCY);
    let done = 0;
    const tick = ticker();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(
      sessions.map(async (s) => {
        for (let r = 0; r < per; r++) {
          await turn(s);
          done++;
          tick(() => say(S, `sessiond ${label}: ${fmt(done)}/${fmt(per * CONCURRENCY)} turns`));
        }
      }),
    );
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    return { count: per * CONCURRENCY, ms, cpuMs: (cpu.user + cpu.system) / 1000 };
  } finally {
    await close();
  }
}

/** p50 (ms) of `n` turns of one session, one after another. */
async function alone(n: number, turn: () => Promise<void>): Promise<number> {
  for (let i = 0; i < 5; i++) await turn(); // warm up
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await turn();
    samples.push(performance.now() - t0);
  }
  return percentile(samples, 50);
}

const embedded = (ctx: Ctx, sync: 'NORMAL' | 'FULL', tag: string) => async () => {
  const engine = await openEngine({ file: join(ctx.tmp, `ceiling-engine-${sync}-${tag}.db`), runner: toolTurn, synchronous: sync });
  return { engine, close: () => engine.close() };
};

const silent = { out: () => undefined, err: () => undefined };

/** The whole worker on a SQLite file, as `sessiond start [--synchronous FULL]` runs it. */
const embeddedWorker = (ctx: Ctx, sync: 'NORMAL' | 'FULL', tag: string) => async () => {
  const host = await startSessiond({ db: join(ctx.tmp, `ceiling-worker-${sync}-${tag}.db`), runner: toolTurn, report: silent, synchronous: sync });
  const release = onCleanup('turn-ceiling embedded worker', async () => {
    await host.close();
  });
  return {
    engine: host.engine,
    close: async () => {
      release();
      await host.close();
    },
  };
};

/** The whole worker on NATS (as the worker user), on fresh streams set up as `sessiond setup` does. */
const natsWorker = (ctx: Ctx, tag: string) => async () => {
  const server = await ctx.nats();
  await freshEventStream(server);
  await setupStreams(server.url);
  const host = await startSessiond({
    db: join(ctx.tmp, `ceiling-nats-worker-${tag}.db`),
    runner: toolTurn,
    report: silent,
    nats: { connection: { servers: server.url, ...WORKER } },
  });
  const release = onCleanup('turn-ceiling nats worker', async () => {
    await host.close();
  });
  return {
    engine: host.engine,
    close: async () => {
      release();
      await host.close();
      await freshEventStream(server);
    },
  };
};

const onNats = (ctx: Ctx, tag: string) => async () => {
  const server = await ctx.nats();
  await freshEventStream(server);
  const log: EventLog = await openJsLog(server);
  const engine = await openEngine({ file: join(ctx.tmp, `ceiling-nats-${tag}.db`), log, runner: toolTurn });
  const release = onCleanup('turn-ceiling nats engine', async () => {
    await engine.close();
    await log.close();
  });
  return {
    engine,
    close: async () => {
      release();
      await engine.close();
      await log.close();
      await freshEventStream(server);
    },
  };
};

/** Raw JetStream turns: 3 OCC publishes of ~100 bytes awaited in sequence per turn, 64 subjects at once. */
async function rawJsPass(js: Awaited<ReturnType<typeof rawJetStream>>['js'], turns: number, tag: string): Promise<Pass> {
  const per = Math.ceil(turns / CONCURRENCY);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, k) => {
      const subject = `sessiond.bench.ceil${tag}s${k}`;
      let last = 0;
      for (let r = 0; r < per * 3; r++) last = (await js.publish(subject, PAYLOAD, { expect: { lastSubjectSequence: last } })).seq;
    }),
  );
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { count: per * CONCURRENCY, ms, cpuMs: (cpu.user + cpu.system) / 1000 };
}

type Open = () => Promise<{ engine: Engine; close: () => Promise<void> }>;

/** The raw turn alone (p50 of `n`), then each sessiond turn alone beside it. */
async function aloneFigures(
  ctx: Ctx,
  n: number,
  raw: { key: string; figure: string; p50: number },
  ours: { open: Open; key: string; figure: string; maxRatio: number }[],
): Promise<void> {
  ctx.results.add({ key: raw.key, section: 'turn-ceiling', figure: raw.figure, unit: 'ms', value: raw.p50, note: `${n} turns` });
  for (const f of ours) {
    const { engine, close } = await f.open();
    const turn = turnOf(engine);
    const ourP50 = await alone(n, () => turn('ses_alone')).finally(close);
    ctx.results.add(
      {
        key: f.key,
        section: 'turn-ceiling',
        figure: f.figure,
        unit: 'ms',
        value: ourP50,
        raw: { label: raw.figure.replace(/, p50.*$/, ''), value: raw.p50, unit: 'ms' },
        note: `${n} turns of one session`,
      },
      { maxRatio: f.maxRatio },
    );
  }
}

export const turnCeiling: Section = {
  name: 'turn-ceiling',
  title:
    'the raw turn ceiling (3 one-row transactions or 3 OCC publishes per turn, 64 at once and alone) next to a sessiond turn of that shape (one step, three durable tool calls), embedded and on NATS',
  async run(ctx) {
    const S = 'turn-ceiling';
    const turns = ctx.sizes.turnRounds * CONCURRENCY * 4;
    for (const [sync, minRatio] of [
      ['NORMAL', 0.35],
      ['FULL', 0.4],
    ] as const) {
      const cpu = { raw: Infinity, sessiond: Infinity, worker: Infinity };
      const [raw, ours, worker] = await interleaved(ctx.sizes.passes, [
        async (i) => {
          const p = await rawPass(ctx, sync, turns * 4, i);
          cpu.raw = Math.min(cpu.raw, p.cpuMs / p.count);
          return p;
        },
        async (i) => {
          const p = await sessiondPass(embedded(ctx, sync, String(i)), turns, S, sync);
          cpu.sessiond = Math.min(cpu.sessiond, p.cpuMs / p.count);
          return p;
        },
        async (i) => {
          const p = await sessiondPass(embeddedWorker(ctx, sync, String(i)), turns, S, `whole worker ${sync}`);
          cpu.worker = Math.min(cpu.worker, p.cpuMs / p.count);
          return p;
        },
      ]);
      const low = sync.toLowerCase();
      ctx.results.add({
        key: `raw.turn.${low}`,
        section: S,
        figure: `raw turn ceiling (3 one-row txns, ${CONCURRENCY} at once, ${sync})`,
        unit: 'turns/s',
        value: raw!.best,
        note: `CPU ${cpu.raw.toFixed(3)} ms per raw turn; ${spread(raw!)}`,
      });
      ctx.results.add(
        {
          key: `turn.embedded.${low}`,
          section: S,
          figure: `sessiond turns, one step + 3 durable tools, ${CONCURRENCY} sessions (${sync})`,
          unit: 'turns/s',
          value: ours!.best,
          raw: { label: `raw turn ceiling (${sync})`, value: raw!.best, unit: 'turns/s' },
          note: spread(ours!),
        },
        { minRatio },
      );
      ctx.results.add(
        {
          key: `turn.embedded.${low}.cpu`,
          section: S,
          figure: `CPU per sessiond turn (${sync})`,
          unit: 'ms',
          value: cpu.sessiond,
          raw: { label: `CPU per raw turn (${sync})`, value: cpu.raw, unit: 'ms' },
          note: 'process.cpuUsage (user + system) over the pass, best pass',
        },
        { maxRatio: 4 },
      );
      ctx.results.add(
        {
          key: sync === 'NORMAL' ? 'turn.worker.embedded' : 'turn.worker.embedded.full',
          section: S,
          figure: `whole worker (startSessiond) turns, one step + 3 durable tools, ${CONCURRENCY} sessions (${sync})`,
          unit: 'turns/s',
          value: worker!.best,
          raw: { label: `raw turn ceiling (${sync})`, value: raw!.best, unit: 'turns/s' },
          note: `${spread(worker!)}; ${(worker!.best / ours!.best).toFixed(2)} x the bare engine`,
        },
        { minRatio: sync === 'NORMAL' ? 0.37 : 0.9 },
      );
      ctx.results.add(
        {
          key: sync === 'NORMAL' ? 'turn.worker.embedded.cpu' : 'turn.worker.embedded.full.cpu',
          section: S,
          figure: `CPU per whole-worker turn (${sync})`,
          unit: 'ms',
          value: cpu.worker,
          raw: { label: `CPU per raw turn (${sync})`, value: cpu.raw, unit: 'ms' },
          note: 'process.cpuUsage (user + system) over the pass, best pass',
        },
        { maxRatio: 4 },
      );
    }

    // one embedded session alone (NORMAL): raw turn vs sessiond turn, p50
    {
      const db = new Database(join(ctx.tmp, 'ceiling-alone.db'));
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT NOT NULL, seq INTEGER NOT NULL, data BLOB NOT NULL)');
      const insert = db.prepare('INSERT INTO t (k, seq, data) VALUES (?, ?, ?)');
      const write = db.transaction((seq: number) => insert.run('s', seq, PAYLOAD));
      let seq = 0;
      const n = ctx.sizes.latencyTurns * 2;
      const rawP50 = await alone(n, async () => {
        for (let j = 0; j < 3; j++) {
          write.immediate(++seq);
          await yieldLoop();
        }
      });
      db.close();
      await aloneFigures(ctx, n, { key: 'raw.turn.alone', figure: 'raw turn alone, p50 (3 one-row txns, NORMAL)', p50: rawP50 }, [
        {
          open: embedded(ctx, 'NORMAL', 'alone'),
          key: 'turn.embedded.alone',
          figure: 'sessiond turn alone, p50 (admit to idle, embedded NORMAL)',
          maxRatio: 12,
        },
        // the whole-worker issue's target: p50 <= 1 ms where the raw turn alone took 0.06 ms
        {
          open: embeddedWorker(ctx, 'NORMAL', 'alone'),
          key: 'turn.worker.embedded.alone',
          figure: 'whole worker turn alone, p50 (admit to idle, embedded NORMAL)',
          maxRatio: 16,
        },
      ]);
    }

    // NATS: 64 at once, then alone
    const raw = await rawJetStream(ctx);
    try {
      const [rawJs, oursJs, workerJs] = await interleaved(ctx.sizes.passes, [
        (i) => rawJsPass(raw.js, turns, `p${i}`),
        (i) => sessiondPass(onNats(ctx, String(i)), turns / 2, S, 'NATS'),
        (i) => sessiondPass(natsWorker(ctx, String(i)), turns / 2, S, 'whole worker on NATS'),
      ]);
      ctx.results.add({
        key: 'raw.turn.js',
        section: S,
        figure: `raw JetStream turn ceiling (3 OCC publishes in sequence, ${CONCURRENCY} at once)`,
        unit: 'turns/s',
        value: rawJs!.best,
        note: spread(rawJs!),
      });
      ctx.results.add(
        {
          key: 'turn.nats',
          section: S,
          figure: `sessiond turns on NATS, one step + 3 durable tools, ${CONCURRENCY} sessions`,
          unit: 'turns/s',
          value: oursJs!.best,
          raw: { label: 'raw JetStream turn ceiling', value: rawJs!.best, unit: 'turns/s' },
          note: spread(oursJs!),
        },
        { minRatio: 0.3 },
      );
      ctx.results.add(
        {
          key: 'turn.worker.nats',
          section: S,
          figure: `whole worker (startSessiond) turns on NATS, one step + 3 durable tools, ${CONCURRENCY} sessions`,
          unit: 'turns/s',
          value: workerJs!.best,
          raw: { label: 'raw JetStream turn ceiling', value: rawJs!.best, unit: 'turns/s' },
          note: `${spread(workerJs!)}; ${(workerJs!.best / oursJs!.best).toFixed(2)} x the bare engine on NATS`,
        },
        { minRatio: 0.21 },
      );
      let seq = 0;
      const n = ctx.sizes.latencyTurns;
      const rawP50 = await alone(n, async () => {
        for (let j = 0; j < 3; j++) seq = (await raw.js.publish('sessiond.bench.alone', PAYLOAD, { expect: { lastSubjectSequence: seq } })).seq;
      });
      await aloneFigures(ctx, n, { key: 'raw.turn.js.alone', figure: 'raw JetStream turn alone, p50 (3 OCC publishes in sequence)', p50: rawP50 }, [
        { open: onNats(ctx, 'alone'), key: 'turn.nats.alone', figure: 'sessiond turn alone on NATS, p50 (admit to idle)', maxRatio: 3 },
        // the whole-worker issue's target: p50 <= 2 ms where the raw JetStream turn alone took 0.69 ms
        { open: natsWorker(ctx, 'alone'), key: 'turn.worker.nats.alone', figure: 'whole worker turn alone on NATS, p50 (admit to idle)', maxRatio: 2.9 },
      ]);
    } finally {
      await raw.close();
    }
  },
};
