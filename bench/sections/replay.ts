/**
 * Replay into a fresh database: from an export file (replayExport: import + projection in one pass)
 * and from JetStream (rebuildProjection over a JetStreamEventLog; and a subscribe variant), against
 * raw batched inserts and a raw ordered consumer over the same stream.
 */
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { readExport } from '../../src/export/export-file.ts';
import { replayExport as replayFile } from '../../src/export/replay-export.ts';
import { rebuildProjection } from '../../src/projector/rebuild.ts';
import { Projector } from '../../src/projector/projector.ts';
import { encodeBatch } from '../../src/nats/stream.ts';
import { STREAM_NAME, subjects } from '../../src/nats/subjects.ts';
import { BENCH_USER } from '../nats.ts';
import { corpus, shapeFor } from '../lib/corpus.ts';
import { writeExportCorpus } from '../lib/export-corpus.ts';
import { interleaved, perSecond, spread } from '../lib/measure.ts';
import { say, ticker, fmt } from '../lib/report.ts';
import type { Section } from '../lib/context.ts';
import { onCleanup } from '../lib/cleanup.ts';
import { freshEventStream, openJsLog } from './logs.ts';
import { eventRows, rawBatchPass } from './raw.ts';

export const replayExport: Section = {
  name: 'replay-export',
  title: 'replay from an export file into a fresh database (one pass: import + projection per batch), alternating with raw batched inserts',
  async run(ctx) {
    const S = 'replay-export';
    const rows = eventRows(ctx, ctx.sizes.rawBatchRows);
    const file = join(ctx.tmp, 'replay.export');
    const n = await writeExportCorpus(ctx.template, file, ctx.sizes.exportReplayEvents);
    say(S, `export file with ${fmt(n)} events written`);
    const tick = ticker();
    const replayPass = async (pass: number) => {
      const db = openDatabase(join(ctx.tmp, `replay-export-${pass}.db`));
      migrate(db);
      try {
        const t0 = performance.now();
        const result = await replayFile(db, file, {
          onProgress: (p) => tick(() => say(S, `pass ${pass + 1}: ${Math.round((100 * p.bytes) / p.totalBytes)}%`)),
        });
        const ms = performance.now() - t0;
        if (result.imported !== n || result.position !== n)
          throw new Error(`replay imported ${result.imported} events up to position ${result.position}, expected ${n}`);
        return { count: n, ms };
      } finally {
        db.close();
      }
    };
    const [raw, replay] = await interleaved(ctx.sizes.passes, [(i) => rawBatchPass(ctx, rows, `replay-${i}`), replayPass]);
    // reading alone, no database: what the file costs (informational)
    const t0 = performance.now();
    await readExport(file, { onEvents: () => undefined });
    const readRate = perSecond(n, performance.now() - t0);
    ctx.results.add(
      {
        key: 'replay.export',
        section: S,
        figure: 'replay from export file (import + projection, one pass)',
        unit: 'events/s',
        value: replay!.best,
        raw: { label: 'raw batched, same section', value: raw!.best, unit: 'rows/s' },
        note: `${fmt(n)} events into a fresh file db per pass, replayExport (one transaction per 1000 events: eventImporter + Projector.apply); readExport alone ${fmt(readRate)} events/s; replay ${spread(replay!)}; raw batched ${spread(raw!)}`,
      },
      { minRatio: 0.35 },
    );
  },
};

export const replayJs: Section = {
  name: 'replay-js',
  title: 'replay from JetStream into a fresh database, and the raw ordered consumer over the same stream',
  async run(ctx) {
    const S = 'replay-js';
    const server = await ctx.nats();
    await freshEventStream(server);
    const writerLog = await openJsLog(server); // creates the stream exactly as sessiond configures it
    await writerLog.close();
    const nc = await connect({ servers: server.url, ...BENCH_USER, name: 'bench-replay' });
    const release = onCleanup('replay nats connection', () => nc.close());
    try {
      const js = jetstream(nc);
      // populate: the corpus as the engine writes it (one message per append), not timed
      const n = ctx.sizes.jsReplayEvents;
      let events = 0;
      let messages = 0;
      const inflight = new Set<Promise<unknown>>();
      const tick = ticker();
      for (const b of corpus(ctx.template, shapeFor(ctx.template, n))) {
        if (events >= n) break;
        const p = js.publish(subjects.events(b.sessionId), encodeBatch(b.events));
        inflight.add(p);
        void p.finally(() => inflight.delete(p));
        events += b.events.length;
        messages++;
        if (inflight.size >= 256) await Promise.race(inflight);
        tick(() => say(S, `populating the stream: ${fmt(events)}/${fmt(n)} events`));
      }
      await Promise.all(inflight);
      say(S, `stream ${STREAM_NAME} holds ${fmt(messages)} messages, ${fmt(events)} events`);

      const rawConsume = async (): Promise<{ count: number; ms: number }> => {
        const t0 = performance.now();
        const consumer = await js.consumers.get(STREAM_NAME, { opt_start_seq: 1 });
        const iter = await consumer.consume({ max_messages: 256 });
        let count = 0;
        for await (const m of iter) {
          count++;
          if (m.info.pending === 0) break;
        }
        const ms = performance.now() - t0;
        await consumer.delete().catch(() => undefined);
        if (count !== messages) throw new Error(`raw consumer read ${count} messages, expected ${messages}`);
        return { count, ms };
      };

      const log = await openJsLog(server);
      const releaseLog = onCleanup('replay log', () => log.close());
      try {
        // the replay: rebuildProjection over the JetStream log into a fresh db, alternating with the raw consumer
        const rebuildPass = async (pass: number) => {
          const db = openDatabase(join(ctx.tmp, `replay-js-${pass}.db`));
          migrate(db);
          try {
            const t0 = performance.now();
            const result = await rebuildProjection(db, log, {
              onProgress: (done, total) => tick(() => say(S, `pass ${pass + 1}: rebuild ${fmt(done)}/${fmt(total)} messages`)),
            });
            const ms = performance.now() - t0;
            if (result.events !== events) throw new Error(`rebuild folded ${result.events} events, expected ${events}`);
            return { count: result.position, ms };
          } finally {
            db.close();
          }
        };
        await rawConsume(); // warm up (server caches)
        const [rawP, rebuildP] = await interleaved(ctx.sizes.passes, [rawConsume, rebuildPass]);
        const raw = ctx.results.add({
          key: 'raw.js.consume',
          section: S,
          figure: 'raw JetStream ordered-consumer replay',
          unit: 'msgs/s',
          value: rawP!.best,
          note: `ordered pull consumer (max_messages 256) over the ${fmt(messages)}-message stream, no decoding; ${spread(rawP!)}`,
        });
        ctx.results.add(
          {
            key: 'replay.js',
            section: S,
            figure: 'replay from JetStream (rebuildProjection)',
            unit: 'msgs/s',
            value: rebuildP!.best,
            raw: { label: 'raw consumer', value: raw.value, unit: 'msgs/s' },
            note: `${fmt(events)} events in ${fmt(messages)} messages (one per append, as the engine writes them) into a fresh db (projection tables) per pass; ${spread(rebuildP!)}`,
          },
          { minRatio: 0.6 },
        );
        // readPages alone: what reading costs without a database
        {
          const t0 = performance.now();
          let count = 0;
          let last = 0;
          for await (const page of log.readPages({ pageSize: 1000 })) {
            count += page.length;
            last = page[page.length - 1]!.position!;
          }
          const ms = performance.now() - t0;
          ctx.results.add({
            key: 'replay.js.readPages',
            section: S,
            figure: 'JetStream readPages, no database',
            unit: 'msgs/s',
            value: perSecond(last, ms),
            raw: { label: 'raw consumer', value: raw.value, unit: 'msgs/s' },
            note: `${fmt(count)} events, 1000-event pages, one ordered consumer for the read (decoded and validated); informational`,
          });
        }
        // the projector following the log from 0 (Projector.follow: one transaction per onBatch call)
        {
          const db = openDatabase(join(ctx.tmp, 'replay-js-follow.db'));
          migrate(db);
          const projector = new Projector(db);
          try {
            const head = await log.head();
            let calls = 0;
            let failure: unknown;
            const t0 = performance.now();
            const sub = projector.follow(log, {
              onApplied: () => {
                calls++;
              },
              onError: (err) => {
                failure = err;
              },
            });
            while (projector.checkpoint() < head && failure === undefined) {
              await new Promise((resolve) => setTimeout(resolve, 1));
              tick(() => say(S, `follow ${fmt(projector.checkpoint())}/${fmt(head)} messages`));
            }
            const ms = performance.now() - t0;
            await sub.close();
            if (failure !== undefined) throw failure;
            ctx.results.add({
              key: 'replay.js.subscribe',
              section: S,
              figure: 'replay from JetStream (Projector.follow)',
              unit: 'msgs/s',
              value: perSecond(head, ms),
              raw: { label: 'raw consumer', value: raw.value, unit: 'msgs/s' },
              note: `Projector.follow from 0 until the checkpoint reaches the head: ${fmt(calls)} transactions for ${fmt(head)} messages; informational`,
            });
          } finally {
            db.close();
          }
        }
      } finally {
        releaseLog();
        await log.close();
      }
    } finally {
      release();
      await nc.close();
      await freshEventStream(server);
    }
  },
};
