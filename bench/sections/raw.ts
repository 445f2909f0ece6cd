/**
 * Raw ceilings, measured in the same run: what better-sqlite3, JetStream and msgpackr do with
 * nothing of sessiond around them. Every sessiond figure is compared with one of these.
 */
import { join } from 'node:path';
import { Packr } from 'msgpackr';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, StorageType, type JetStreamClient } from '@nats-io/jetstream';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { pack, encodeEvent, decodeEvent } from '../../src/events/codec.ts';
import { encodeBatch } from '../../src/nats/stream.ts';
import { BENCH_USER } from '../nats.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { corpus, shapeFor, stepDrafts } from '../lib/corpus.ts';
import { bestOf, spread, type Passes } from '../lib/measure.ts';
import { say, ticker, fmt } from '../lib/report.ts';
import { CONCURRENCY, type Ctx, type Section } from '../lib/context.ts';
import { onCleanup } from '../lib/cleanup.ts';

export const INSERT_SQL = 'INSERT INTO event (id, aggregate_id, seq, type, version, time, data) VALUES (?, ?, ?, ?, ?, ?, ?)';

/**
 * The raw substrate's table: a row per event with three indexes, as sessiond stored events up to
 * schema 21 (migration 013's `event`), kept as the raw figures' reference after the log moved to a
 * row per append (schema 22), so they compare with earlier runs.
 */
const RAW_EVENT_TABLE = `
  CREATE TABLE event (
    position     INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    aggregate_id TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    type         TEXT NOT NULL,
    version      INTEGER NOT NULL,
    time         INTEGER NOT NULL,
    data         BLOB NOT NULL,
    committed_at INTEGER
  );
  CREATE UNIQUE INDEX event_aggregate_seq_idx ON event (aggregate_id, seq);
`;

/** Rows of the raw `event` table for `n` realistic events, encoded ahead of time. */
export function eventRows(ctx: Ctx, n: number): unknown[][] {
  const rows: unknown[][] = [];
  for (const b of corpus(ctx.template, shapeFor(ctx.template, n))) {
    for (const e of b.events) {
      if (rows.length >= n) return rows;
      rows.push([e.id, e.sessionId, e.seq, e.type, e.version, e.time, pack(e.payload)]);
    }
  }
  return rows;
}

function freshDb(ctx: Ctx, name: string) {
  const db = openDatabase(join(ctx.tmp, `${name}.db`));
  migrate(db);
  db.exec(RAW_EVENT_TABLE);
  return db;
}

/** One pass of raw inserts, one row per IMMEDIATE transaction, into a fresh raw event table. */
export function rawTxnPass(ctx: Ctx, rows: unknown[][], pass: number): { count: number; ms: number } {
  const db = freshDb(ctx, `raw-txn-${pass}`);
  try {
    const insert = db.prepare(INSERT_SQL);
    const one = db.transaction((r: unknown[]) => {
      insert.run(...r);
    });
    const n = ctx.sizes.rawTxnRows;
    const tick = ticker();
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      one.immediate(rows[i]!);
      if ((i & 1023) === 0) tick(() => say('raw-sqlite', `pass ${pass + 1}: one row per transaction, ${fmt(i)}/${fmt(n)} rows`));
    }
    return { count: n, ms: performance.now() - t0 };
  } finally {
    db.close();
  }
}

/** One pass of raw inserts, all rows in one IMMEDIATE transaction, into a fresh raw event table. */
export function rawBatchPass(ctx: Ctx, rows: unknown[][], pass: number | string): { count: number; ms: number } {
  const db = freshDb(ctx, `raw-batch-${pass}`);
  try {
    const insert = db.prepare(INSERT_SQL);
    const many = db.transaction((rs: unknown[][]) => {
      for (const r of rs) insert.run(...r);
    });
    const slice = rows.slice(0, ctx.sizes.rawBatchRows);
    const t0 = performance.now();
    many.immediate(slice);
    return { count: slice.length, ms: performance.now() - t0 };
  } finally {
    db.close();
  }
}

export function addRawTxn(ctx: Ctx, p: Passes): void {
  ctx.results.add({
    key: 'raw.sqlite.txn',
    section: 'raw-sqlite',
    figure: 'raw SQLite insert, 1 row per transaction',
    unit: 'rows/s',
    value: p.best,
    note: `${ctx.sizes.rawTxnRows} rows into a fresh event table of a row per event (3 indexes, sessiond's up to schema 21), BEGIN IMMEDIATE..COMMIT per row, payloads pre-encoded; ${spread(p)}`,
  });
}

export function addRawBatch(ctx: Ctx, p: Passes): void {
  ctx.results.add({
    key: 'raw.sqlite.batch',
    section: 'raw-sqlite',
    figure: 'raw SQLite insert, batched in one transaction',
    unit: 'rows/s',
    value: p.best,
    note: `${ctx.sizes.rawBatchRows} rows in one IMMEDIATE transaction into a fresh event table of a row per event, payloads pre-encoded; ${spread(p)}`,
  });
}

export const rawMsgpack: Section = {
  name: 'raw-msgpack',
  title: 'msgpackr encode+decode of plain maps, and the codec (validation) for comparison',
  async run(ctx) {
    const S = 'raw-msgpack';
    const events: SessionEvent[] = [];
    for (const b of corpus(ctx.template, shapeFor(ctx.template, 1000))) events.push(...b.events);
    const maps = events.map((e) => ({ id: e.id, type: e.type, version: e.version, sessionId: e.sessionId, seq: e.seq, time: e.time, payload: e.payload }));
    const packr = new Packr({ useRecords: false, moreTypes: false, variableMapSize: true });
    const n = ctx.sizes.msgpackOps;
    let sink = 0;
    const run = (fn: (i: number) => void, count: number) => {
      for (let i = 0; i < Math.min(2000, count); i++) fn(i); // warm up
      const t0 = performance.now();
      for (let i = 0; i < count; i++) fn(i);
      return performance.now() - t0;
    };
    const raw = await bestOf(ctx.sizes.passes, () => ({
      count: n,
      ms: run((i) => {
        sink += (packr.unpack(packr.pack(maps[i % maps.length])) as { seq: number }).seq;
      }, n),
    }));
    ctx.results.add({
      key: 'raw.msgpack',
      section: S,
      figure: 'raw msgpackr encode+decode (plain map event)',
      unit: 'events/s',
      value: raw.best,
      note: `${n} round trips of realistic event maps (${maps.length} distinct), useRecords: false as in src/events/codec.ts; ${spread(raw)}`,
    });
    const codecN = Math.max(1000, Math.floor(n / 4));
    const codec = await bestOf(ctx.sizes.passes, () => ({
      count: codecN,
      ms: run((i) => {
        sink += decodeEvent(encodeEvent(events[i % events.length]!)).seq;
      }, codecN),
    }));
    ctx.results.add({
      key: 'codec.roundtrip',
      section: S,
      figure: 'codec encodeEvent+decodeEvent (validated)',
      unit: 'events/s',
      value: codec.best,
      raw: { label: 'raw msgpackr', value: ctx.results.get('raw.msgpack')!.value, unit: 'events/s' },
      note: `decodeEvent validates the envelope and the payload with zod; informational, no target; ${spread(codec)}`,
    });
    if (sink === 0.5) say(S, 'unreachable'); // keeps the loops from being optimised away
  },
};

/** The message an append of a typical 3-event batch publishes (for the raw publish ceiling). */
export function typicalMessage(ctx: Ctx): Uint8Array {
  const drafts = stepDrafts(ctx.template, 'raw');
  return encodeBatch(drafts.map((d, i) => ({ ...d, version: 1, sessionId: 'ses_raw', seq: i + 1 })) as SessionEvent[]);
}

/** Raw OCC publishes: `per` messages on each of 64 subjects, the chains in parallel. */
export async function rawPublishPass(js: JetStreamClient, data: Uint8Array, per: number, tag: string): Promise<{ count: number; ms: number }> {
  const tick = ticker();
  let done = 0;
  const chain = async (subject: string) => {
    let last = 0;
    for (let i = 0; i < per; i++) {
      const ack = await js.publish(subject, data, { expect: { lastSubjectSequence: last } });
      last = ack.seq;
      done++;
      tick(() => say('raw-js-publish', `${tag}: ${fmt(done)}/${fmt(per * CONCURRENCY)} messages`));
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, k) => chain(`sessiond.bench.${tag}s${k}`)));
  return { count: per * CONCURRENCY, ms: performance.now() - t0 };
}

/** A raw NATS connection and a BENCH_RAW stream on `sessiond.bench.>` (deleted by the returned close). */
export async function rawJetStream(
  ctx: Ctx,
  options: { noAsyncTraces?: boolean; stream?: string } = {},
): Promise<{ js: JetStreamClient; close: () => Promise<void> }> {
  const server = await ctx.nats();
  const stream = options.stream ?? 'BENCH_RAW';
  const nc = await connect({ servers: server.url, ...BENCH_USER, name: 'bench-raw', noAsyncTraces: options.noAsyncTraces ?? false });
  const release = onCleanup('raw nats connection', () => nc.close());
  const jsm = await jetstreamManager(nc);
  if (!options.stream) {
    await jsm.streams.delete(stream).catch(() => undefined);
    await jsm.streams.add({ name: stream, subjects: ['sessiond.bench.>'], storage: StorageType.File, num_replicas: 1 });
  }
  return {
    js: jetstream(nc),
    close: async () => {
      release();
      if (!options.stream) await jsm.streams.delete(stream).catch(() => undefined);
      await nc.close();
    },
  };
}
