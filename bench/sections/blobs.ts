/**
 * Large payloads beside the log: admit a prompt with a 6 MB image part and run its turn (the
 * runner reads the image back as a model runner does, as base64), embedded and on NATS, against
 * the raw cost of writing the same bytes in the same run: one SQLite blob insert, one Object Store
 * put. Each pass stores new bytes (the same content is stored once, so a repeat would cost nothing).
 * Then a 64 MiB blob read in chunks through the `blob` command's reading (ranged reads), against
 * reading it whole from the same store.
 */
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { Objm } from '@nats-io/obj';
import { startSessiond, type Sessiond } from '../../src/host.ts';
import { openDatabase } from '../../src/storage/sqlite/database.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { partsWithBytes } from '../../src/runner/model/blob-parts.ts';
import type { Runner } from '../../src/runner/types.ts';
import { WORKER } from '../../src/testing/nats-server.ts';
import type { BlobStore } from '../../src/blobs/blob-store.ts';
import { systemClock } from '../../src/clock.ts';
import type { SessionEvent } from '../../src/events/envelope.ts';
import { readBlobChunk } from '../../src/nats/blob-commands.ts';
import { connectNats } from '../../src/nats/connection.ts';
import { MAX_BLOB_READ_BYTES } from '../../src/nats/command-protocol.ts';
import { ObjectBlobStore } from '../../src/nats/object-blob-store.ts';
import { migrate } from '../../src/storage/sqlite/migrate.ts';
import { SqliteBlobStore } from '../../src/storage/sqlite/sqlite-blob-store.ts';
import { BENCH_USER } from '../nats.ts';
import { interleaved, spread } from '../lib/measure.ts';
import { say } from '../lib/report.ts';
import type { Ctx, Section } from '../lib/context.ts';

const S = 'blobs';
const SIZE = 6 * 1024 * 1024;
/** Turns (and raw writes) per pass. */
const TURNS = 4;

/** `SIZE` bytes that pass as a PNG, different for each seed. */
function photo(seed: number): Buffer {
  const b = Buffer.alloc(SIZE);
  for (let i = 0; i < SIZE; i += 4) b.writeUInt32LE((Math.imul(i + 1, 2654435761) ^ Math.imul(seed + 1, 40503)) >>> 0, i);
  b.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 0);
  return b;
}

/** Reads the turn's blob parts as a model runner does (base64 for the request), then echoes. */
const echo = echoRunner();
const reading: Runner = async (ctx) => {
  for (const input of ctx.inputs) await partsWithBytes(input.parts, ctx);
  await echo(ctx);
};

let seed = 0;
/** `TURNS` admissions of a 6 MB image prompt, each run to its end, one after another. */
async function turns(host: Sessiond, label: string, pass: number): Promise<{ count: number; ms: number }> {
  const photos = Array.from({ length: TURNS }, () => photo(++seed).toString('base64'));
  const t0 = performance.now();
  for (const [i, data] of photos.entries()) {
    const id = `ses_blob_${label}_${pass}_${i}`;
    await host.admit(id, {
      prompt: [
        { type: 'text', text: 'describe this' },
        { type: 'image', data, mediaType: 'image/png' },
      ],
    });
    await host.awaitIdle(id);
  }
  return { count: TURNS, ms: performance.now() - t0 };
}

/** `TURNS` raw writes of new 6 MB contents. */
async function raw(write: (bytes: Buffer, i: number) => unknown): Promise<{ count: number; ms: number }> {
  const photos = Array.from({ length: TURNS }, () => photo(++seed));
  const t0 = performance.now();
  for (const [i, bytes] of photos.entries()) await write(bytes, i);
  return { count: TURNS, ms: performance.now() - t0 };
}

const msPer = (rate: number) => 1000 / rate;

async function embedded(ctx: Ctx): Promise<void> {
  const host = await startSessiond({ db: join(ctx.tmp, 'blobs.db'), runner: reading });
  const db = openDatabase(join(ctx.tmp, 'blobs-raw.db'));
  db.exec('CREATE TABLE raw_blob (sha256 TEXT PRIMARY KEY, data BLOB NOT NULL)');
  const insert = db.prepare('INSERT INTO raw_blob (sha256, data) VALUES (?, ?)');
  let n = 0;
  let passes: Awaited<ReturnType<typeof interleaved>>;
  try {
    passes = await interleaved(ctx.sizes.passes, [
      () => raw((bytes) => db.transaction(() => insert.run(`raw_${++n}`, bytes)).immediate()),
      (pass) => turns(host, 'sqlite', pass),
    ]);
  } finally {
    await host.close();
    db.close();
  }
  const [rawSqlite, turnSqlite] = passes;
  say(S, `embedded: ${msPer(turnSqlite!.best).toFixed(1)} ms a turn with a 6 MB image, raw blob insert ${msPer(rawSqlite!.best).toFixed(1)} ms`);
  ctx.results.add(
    {
      key: 'blobs.sqlite',
      section: S,
      figure: 'a 6 MB image prompt, embedded: admit + turn',
      unit: 'ms',
      value: msPer(turnSqlite!.best),
      raw: { label: 'raw SQLite insert of the same 6 MB in one transaction', value: msPer(rawSqlite!.best), unit: 'ms' },
      note: `${TURNS} turns one after another a pass, each admitting new bytes (base64 in the request, decoded, hashed, signature checked, stored in the file's blob table) and reading them back for the runner as base64; ${spread(turnSqlite!)}`,
    },
    { maxRatio: 10 },
  );
}

async function onNats(ctx: Ctx): Promise<void> {
  const server = await ctx.nats();
  const host = await startSessiond({
    db: join(ctx.tmp, 'blobs-nats.db'),
    runner: reading,
    nats: { connection: { servers: server.url, ...WORKER, name: 'bench-blobs' } },
  });
  const admin = await connect({ servers: server.url, ...BENCH_USER, name: 'bench-blobs-raw' });
  const objm = new Objm(admin);
  const bucket = await objm.create('BENCH_BLOBS_RAW');
  let passes: Awaited<ReturnType<typeof interleaved>>;
  try {
    passes = await interleaved(ctx.sizes.passes, [
      () => raw((bytes, i) => bucket.putBlob({ name: `raw_${seed}_${i}`, options: { max_chunk_size: 256 * 1024 } }, bytes)),
      (pass) => turns(host, 'nats', pass),
    ]);
  } finally {
    await host.close();
    await bucket.destroy().catch(() => undefined);
    await admin.close();
  }
  const [rawJs, turnJs] = passes;
  say(S, `NATS: ${msPer(turnJs!.best).toFixed(1)} ms a turn with a 6 MB image, raw Object Store put ${msPer(rawJs!.best).toFixed(1)} ms`);
  ctx.results.add(
    {
      key: 'blobs.nats',
      section: S,
      figure: 'a 6 MB image prompt, NATS: admit + turn',
      unit: 'ms',
      value: msPer(turnJs!.best),
      raw: { label: 'raw Object Store put of the same 6 MB (256 KiB chunks)', value: msPer(rawJs!.best), unit: 'ms' },
      note: `${TURNS} turns one after another a pass on the worker (startSessiond on NATS): the image stored in the bucket SESSIOND_BLOBS as the worker user before the event, then read back whole (hash checked) for the runner; ${spread(turnJs!)}`,
    },
    { maxRatio: 10 },
  );
}

const READ_SIZE = 64 * 1024 * 1024;

/** The blob read as a client does: chunk after chunk through readBlobChunk, from a session referencing it. */
async function inChunks(store: BlobStore, sha256: string): Promise<{ count: number; ms: number }> {
  const event = {
    seq: 1,
    type: 'input.admitted',
    payload: { prompt: [{ type: 'file', blob: { sha256, size: READ_SIZE, mediaType: 'application/octet-stream' } }] },
  } as unknown as SessionEvent;
  const t0 = performance.now();
  for (let offset = 0; ; offset += MAX_BLOB_READ_BYTES) {
    const r = await readBlobChunk({ sessionId: 'ses_bench_read', sha256, offset }, async (_id, p) => (p.afterSeq > 0 ? [] : [event]), {
      store,
      maxBlobBytes: READ_SIZE,
      tenant: undefined,
    });
    if (!r.more) break;
  }
  return { count: 1, ms: performance.now() - t0 };
}

async function whole(store: BlobStore, sha256: string): Promise<{ count: number; ms: number }> {
  const t0 = performance.now();
  for await (const _ of store.read(sha256));
  return { count: 1, ms: performance.now() - t0 };
}

/** A 64 MiB blob read in 512 KiB chunks through the blob command, against one whole read of it, embedded and on NATS. */
async function chunkedReads(ctx: Ctx): Promise<void> {
  const bytes = photo(++seed);
  const big = Buffer.concat(Array.from({ length: READ_SIZE / SIZE + 1 }, (_, i) => (i === 0 ? bytes : photo(++seed)))).subarray(0, READ_SIZE);
  const passes = Math.min(2, ctx.sizes.passes);
  const db = openDatabase(join(ctx.tmp, 'blobs-read.db'));
  const server = await ctx.nats();
  const nc = await connectNats({ servers: server.url, ...WORKER, name: 'bench-blobs-read' });
  try {
    migrate(db);
    const stores: [string, BlobStore][] = [
      ['embedded', new SqliteBlobStore(db, systemClock)],
      ['NATS', await ObjectBlobStore.open(nc)],
    ];
    for (const [where, store] of stores) {
      const { sha256 } = await store.put(big, { mediaType: 'application/octet-stream', maxBytes: READ_SIZE });
      const [raw, chunked] = await interleaved(passes, [() => whole(store, sha256), () => inChunks(store, sha256)]);
      say(
        S,
        `${where}: a 64 MiB blob in ${READ_SIZE / MAX_BLOB_READ_BYTES} chunks ${msPer(chunked!.best).toFixed(0)} ms, whole ${msPer(raw!.best).toFixed(0)} ms`,
      );
      ctx.results.add(
        {
          key: `blobs.read.${where === 'NATS' ? 'nats' : 'sqlite'}`,
          section: S,
          figure: `a 64 MiB blob read through the blob command in 512 KiB chunks, ${where}`,
          unit: 'ms',
          value: msPer(chunked!.best),
          raw: { label: 'one whole read of it from the same store (hash checked)', value: msPer(raw!.best), unit: 'ms' },
          note: `readBlobChunk chunk after chunk (each a ranged read; base64 reply as sent)${
            where === 'NATS'
              ? ': the chunk messages covering each range fetched by sequence'
              : ': SQLite loads the whole value for each substr, so this grows with the square of the size'
          }; ${spread(chunked!)}`,
        },
        { maxRatio: where === 'NATS' ? 10 : 100 },
      );
    }
  } finally {
    db.close();
    await nc.close();
  }
}

export const blobs: Section = {
  name: S,
  title:
    'large payloads: admit + run a turn with a 6 MB image part, embedded and on NATS, against writing the same bytes raw; a 64 MiB blob read in chunks against a whole read',
  async run(ctx) {
    await embedded(ctx);
    await onNats(ctx);
    await chunkedReads(ctx);
  },
};
