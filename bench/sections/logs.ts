/** The logs and the projector against their raw ceilings. */
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteEventLog } from '../../src/storage/sqlite/sqlite-event-log.ts';
import { JetStreamEventLog } from '../../src/nats/jetstream-event-log.ts';
import { STREAM_NAME } from '../../src/nats/subjects.ts';
import { setupEventStream } from '../../src/nats/stream.ts';
import { Projector } from '../../src/projector/projector.ts';
import { WORKER, type NatsServer } from '../../src/testing/nats-server.ts';
import { BENCH_USER } from '../nats.ts';
import type { DraftEvent } from '../../src/events/envelope.ts';
import { corpus, pages, shapeFor, stepDrafts, withPositions } from '../lib/corpus.ts';
import { fullGc, interleaved, spread } from '../lib/measure.ts';
import { addRawBatch, addRawTxn, eventRows, rawBatchPass, rawJetStream, rawPublishPass, rawTxnPass, typicalMessage } from './raw.ts';
import { say, ticker, fmt } from '../lib/report.ts';
import { CONCURRENCY, type Section } from '../lib/context.ts';
import { onCleanup } from '../lib/cleanup.ts';

export const sqliteAppend: Section = {
  name: 'sqlite-append',
  title: 'embedded log append (SqliteEventLog.append, 3-event batches, OCC), alternating with raw 1-row transactions',
  async run(ctx) {
    const S = 'sqlite-append';
    const n = ctx.sizes.sqliteAppends;
    const rows = eventRows(ctx, ctx.sizes.rawTxnRows);
    const drafts: DraftEvent[][] = Array.from({ length: n + 200 }, (_, i) => stepDrafts(ctx.template, `a${i}`));
    const logPass = async (pass: number) => {
      const db = openDatabase(join(ctx.tmp, `append-${pass}.db`));
      migrate(db);
      const log = new SqliteEventLog(db);
      try {
        const seqs = new Array<number>(CONCURRENCY).fill(0);
        const append = async (i: number) => {
          const k = i % CONCURRENCY;
          await log.append(`ses_a${k}`, seqs[k]!, drafts[i]!);
          seqs[k]! += 3;
        };
        for (let i = n; i < n + 200; i++) await append(i); // warm up
        const tick = ticker();
        const t0 = performance.now();
        for (let i = 0; i < n; i++) {
          await append(i);
          tick(() => say(S, `pass ${pass + 1}: ${fmt(i)}/${fmt(n)} appends`));
        }
        return { count: 3 * n, ms: performance.now() - t0 };
      } finally {
        await log.close();
        db.close();
      }
    };
    const [raw, result] = await interleaved(ctx.sizes.passes, [(i) => rawTxnPass(ctx, rows, i), logPass]);
    addRawTxn(ctx, raw!);
    ctx.results.add(
      {
        key: 'sqlite.append',
        section: S,
        figure: 'embedded log append (3-event batches)',
        unit: 'events/s',
        value: result!.best,
        raw: { label: 'raw 1 row/txn', value: raw!.best, unit: 'rows/s' },
        note: `${n} appends of step.started+text.completed+step.ended round-robin over ${CONCURRENCY} sessions, sequential awaits, fresh db per pass; ${fmt(result!.best / 3)} appends/s; ${spread(result!)}`,
      },
      { minRatio: 0.5 },
    );
  },
};

export const projector: Section = {
  name: 'projector',
  title: 'projector: realistic echo-turn events folded into the session tables in batches, alternating with raw batched inserts',
  async run(ctx) {
    const S = 'projector';
    const n = ctx.sizes.projectorEvents;
    const rows = eventRows(ctx, ctx.sizes.rawBatchRows);
    const batches = [...pages(withPositions(corpus(ctx.template, shapeFor(ctx.template, n))), 1000)];
    const total = batches.reduce((s, b) => s + b.length, 0);
    say(S, `${fmt(total)} events in ${batches.length} batches of ~1000 prepared`);
    const projectorPass = (pass: number) => {
      const db = openDatabase(join(ctx.tmp, `projector-${pass}.db`));
      migrate(db);
      try {
        const projector = new Projector(db);
        const tick = ticker();
        let done = 0;
        const t0 = performance.now();
        for (const b of batches) {
          projector.apply(b);
          done += b.length;
          tick(() => say(S, `pass ${pass + 1}: ${fmt(done)}/${fmt(total)} events`));
        }
        return { count: total, ms: performance.now() - t0 };
      } finally {
        db.close();
      }
    };
    const [raw, result] = await interleaved(ctx.sizes.passes, [(i) => rawBatchPass(ctx, rows, i), projectorPass]);
    addRawBatch(ctx, raw!);
    ctx.results.add(
      {
        key: 'projector.apply',
        section: S,
        figure: 'projector apply (1000-event batches)',
        unit: 'events/s',
        value: result!.best,
        raw: { label: 'raw batched', value: raw!.best, unit: 'rows/s' },
        note: `${fmt(total)} events of 3-turn echo sessions (${CONCURRENCY} interleaved at a time) into a fresh file db per pass, Projector.apply per batch; ${spread(result!)}`,
      },
      { minRatio: 0.35 },
    );
  },
};

/** A fresh, empty sessiond events stream (between sections; each wants a fresh one), set up as `sessiond setup` does: workers only verify it. */
export async function freshEventStream(server: NatsServer): Promise<void> {
  const nc = await connect({ servers: server.url, ...BENCH_USER, name: 'bench-admin' });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(STREAM_NAME).catch(() => undefined);
    await setupEventStream(jsm, { manage: true });
  } finally {
    await nc.close();
  }
}

export async function openJsLog(server: NatsServer): Promise<JetStreamEventLog> {
  const log = await JetStreamEventLog.open({ connection: { servers: server.url, ...WORKER, name: 'bench-log' } });
  return log;
}

export const jsAppend: Section = {
  name: 'js-append',
  title: 'JetStream log append (JetStreamEventLog.append, 3-event batches, 64 sessions concurrently), alternating with raw OCC publishes',
  async run(ctx) {
    const S = 'js-append';
    const server = await ctx.nats();
    await freshEventStream(server);
    const raw = await rawJetStream(ctx);
    const rawQuiet = await rawJetStream(ctx, { noAsyncTraces: true, stream: 'BENCH_RAW' });
    const log = await openJsLog(server);
    const release = onCleanup('js-append log', () => log.close());
    try {
      const per = ctx.sizes.jsPerSubject;
      const data = typicalMessage(ctx);
      let done = 0;
      const tick = ticker();
      const chain = async (session: string, drafts: DraftEvent[][]) => {
        let seq = 0;
        for (const batch of drafts) {
          await log.append(session, seq, batch);
          seq += 3;
          done++;
          tick(() => say(S, `${fmt(done)}/${fmt(per * CONCURRENCY)} appends`));
        }
      };
      const prepare = (tag: string, count: number) =>
        Array.from({ length: CONCURRENCY }, (_, k) => Array.from({ length: count }, (_, i) => stepDrafts(ctx.template, `${tag}k${k}i${i}`)));
      // warm up both paths
      await rawPublishPass(raw.js, data, 5, 'warm');
      await Promise.all(prepare('w', 5).map((d, k) => chain(`ses_jw${k}`, d)));
      const logPass = async (pass: number) => {
        const prepared = prepare(`p${pass}`, per);
        done = 0;
        const t0 = performance.now();
        await Promise.all(prepared.map((d, k) => chain(`ses_j${pass}x${k}`, d)));
        return { count: per * CONCURRENCY, ms: performance.now() - t0 };
      };
      fullGc();
      const heapBefore = process.memoryUsage().heapUsed;
      const [rawP, result, quietP] = await interleaved(ctx.sizes.passes, [
        (i) => rawPublishPass(raw.js, data, per, `p${i}`),
        logPass,
        (i) => rawPublishPass(rawQuiet.js, data, per, `q${i}`),
      ]);
      const gcOk = fullGc();
      const retained = (process.memoryUsage().heapUsed - heapBefore) / (ctx.sizes.passes * per * CONCURRENCY);
      ctx.results.add({
        key: 'raw.js.publish',
        section: 'raw-js-publish',
        figure: 'raw JetStream OCC publish, 64 subjects in parallel',
        unit: 'msgs/s',
        value: rawP!.best,
        note: `${CONCURRENCY} x ${per} js.publish with expect.lastSubjectSequence (ack seq tracked per subject), ${data.byteLength}-byte messages (a 3-event batch), file storage; ${spread(rawP!)}`,
      });
      ctx.results.add(
        {
          key: 'js.append',
          section: S,
          figure: 'JetStream log append, 64 sessions',
          unit: 'msgs/s',
          value: result!.best,
          raw: { label: 'raw OCC publish', value: rawP!.best, unit: 'msgs/s' },
          note: `${CONCURRENCY} new sessions x ${per} appends of 3 events (one message each) = ${fmt(3 * result!.best)} events/s; ${spread(result!)}; stats ${JSON.stringify(log.stats)}`,
        },
        { minRatio: 0.7 },
      );
      ctx.results.add({
        key: 'raw.js.publish.noAsyncTraces',
        section: 'raw-js-publish',
        figure: 'raw JetStream OCC publish, connection with noAsyncTraces',
        unit: 'msgs/s',
        value: quietP!.best,
        raw: { label: 'raw OCC publish', value: rawP!.best, unit: 'msgs/s' },
        note: `the same raw publishes on a connection opened with noAsyncTraces: true (no RequestError/TimeoutError built per request); informational; ${spread(quietP!)}`,
      });
      if (gcOk) {
        ctx.results.add({
          key: 'js.append.retained',
          section: S,
          figure: 'heap retained per JetStream append (after gc)',
          unit: 'bytes',
          value: retained,
          note: `heapUsed after a full gc, after minus before the ${ctx.sizes.passes} passes, divided by the ${fmt(ctx.sizes.passes * per * CONCURRENCY)} log appends (raw publishes interleaved); should be ~0 (the tail cache holds ${CONCURRENCY * ctx.sizes.passes} new sessions)`,
        });
      }
    } finally {
      release();
      await log.close();
      await rawQuiet.close();
      await raw.close();
      await freshEventStream(server);
    }
  },
};
