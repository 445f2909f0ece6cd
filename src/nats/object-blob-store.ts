/**
 * Blobs on NATS: a JetStream Object Store bucket (`SESSIOND_BLOBS`, stream `OBJ_SESSIOND_BLOBS`),
 * one object per content, named by its SHA-256 (hex), its media type in the object's metadata.
 * `sessiond setup` makes the bucket (`setupBlobBucket`, the events stream's replicas); workers
 * verify it and never create it. Why: docs/architecture.md ("Design notes: storage").
 *
 * A put with `expectedSha256` streams the bytes into the object as it reads them (chunks of
 * `CHUNK_BYTES`), checked on the way and at the end: a refusal purges what was written. Without
 * it the name is known only once every byte is read, so the bytes are read whole first (at most
 * `maxBytes`). The object is written only if its name holds nothing (the meta message's expected
 * last subject sequence), so two puts of the same content race safely: one writes, the other
 * finds it and leaves no chunks behind.
 *
 * A ranged read fetches only the chunk messages that cover the range, by stream sequence: an
 * object's chunk sequences (and sizes) come from one pass of a headers-only consumer over its
 * chunk subject, kept in a small LRU per object version (its nuid). Each read checks the meta
 * message first, so a deleted object is not found and a replaced one is indexed again.
 */
import {
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  type StoredMsg,
  type StreamConfig,
} from '@nats-io/jetstream';
import { Objm, setSha256Backend, type ObjectInfo, type ObjectStore } from '@nats-io/obj';
import { headers, nanos, type NatsConnection } from '@nats-io/transport-node';
import { systemClock, type Clock } from '../clock.ts';
import {
  BlobIntake,
  blobCorrupt,
  blobNotFound,
  checkRange,
  checkSha256,
  chunksOf,
  rangeWithin,
  readWhole,
  type BlobRange,
  type BlobRef,
  type BlobSource,
  type BlobStore,
  type PutBlobOptions,
  type StoredBlob,
} from '../blobs/blob-store.ts';
import { isStagingName, type BlobStaging, type StagedChunk } from '../blobs/blob-staging.ts';
import { CorruptDataError, isSessiondError, messageOf } from '../errors.ts';
import { createHash } from 'node:crypto';
import { DEFAULT_DUPLICATE_WINDOW_MS, isWrongLastSequence, manageStream, type StreamSetup } from './stream.ts';

export const BLOB_BUCKET = 'SESSIOND_BLOBS';
/** Bytes per chunk message (the library's default is 128 KiB; NATS caps a message at max_payload, 1 MB in nats.conf). */
export const CHUNK_BYTES = 256 * 1024;

/** Objects whose chunk index a store keeps (least recently used dropped first). */
export const CHUNK_INDEX_CACHE = 64;
/** Chunk messages a ranged read asks for before it has the first (each CHUNK_BYTES at most). */
const FETCH_AHEAD = 4;
/** How long an index pass may wait for the next chunk's headers before it reads the object's meta again (its chunks purged meanwhile). */
const INDEX_STALL_MS = 10_000;

const streamOf = (bucket: string) => `OBJ_${bucket}`;

/**
 * The bucket's stream, as the Object Store library makes one (its subjects, rollups for the
 * meta messages, discard new, direct gets), checked setting by setting like sessiond's streams.
 */
export function blobStreamConfig(options: { bucket?: string; replicas?: number } = {}): StreamConfig {
  const bucket = options.bucket ?? BLOB_BUCKET;
  return {
    name: streamOf(bucket),
    subjects: [`$O.${bucket}.C.>`, `$O.${bucket}.M.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.New,
    max_msgs_per_subject: -1,
    max_msgs: -1,
    max_bytes: -1,
    max_age: 0,
    max_msg_size: -1,
    max_consumers: -1,
    duplicate_window: nanos(DEFAULT_DUPLICATE_WINDOW_MS),
    num_replicas: options.replicas ?? 1,
    deny_delete: false,
    // deleting an object purges its chunks
    deny_purge: false,
    // a meta message replaces the object's earlier ones
    allow_rollup_hdrs: true,
    allow_direct: true,
  } as StreamConfig;
}

/**
 * `sessiond setup` (the admin user): creates the bucket's stream or brings it to its settings
 * (replicas as given, else as they are; a new one gets `newReplicas`).
 */
export function setupBlobBucket(
  jsm: JetStreamManager,
  options: { bucket?: string; replicas?: number | undefined; newReplicas?: number; serverVersion?: string | undefined } = {},
): Promise<StreamSetup> {
  return manageStream(jsm, blobStreamConfig(options.bucket === undefined ? {} : { bucket: options.bucket }), {
    replicas: options.replicas,
    ...(options.newReplicas !== undefined ? { newReplicas: options.newReplicas } : {}),
    serverVersion: options.serverVersion,
    manage: true,
  });
}

/** The Object Store's digest of content whose SHA-256 is `sha256` (hex): `SHA-256=` and base64url with padding. */
const objectDigest = (sha256: string) => `SHA-256=${Buffer.from(sha256, 'hex').toString('base64').replace(/\+/g, '-').replace(/\//g, '_')}`;
const live = (info: ObjectInfo | null): info is ObjectInfo => info !== null && !info.deleted;

/** An object's meta message as the server holds it (the JSON the library writes), and its stream sequence (the object's revision). */
interface RawMeta {
  meta: {
    name: string;
    nuid: string;
    deleted?: boolean;
    digest?: string;
    mtime?: string;
    size?: number;
    chunks?: number;
    metadata?: Record<string, string>;
    [k: string]: unknown;
  };
  revision: number;
}

/** Where one version of an object's chunks are: each chunk's stream sequence and the blob offset it starts at. */
interface ChunkIndex {
  nuid: string;
  seqs: number[];
  starts: number[];
}

/** When the object's content was last put: the `storedAt` this store writes in its metadata, else its modification time. */
const storedAtOf = (meta: RawMeta['meta'] | ObjectInfo): number => {
  const given = Number(meta.metadata?.['storedAt']);
  return Number.isFinite(given) && given > 0 ? given : Date.parse(meta.mtime ?? '');
};

/**
 * Also the staging of chunked uploads (blob-staging.ts): staged chunks are objects of the same
 * bucket named `upload.<scope>.<uploadId>.<offset>`, which `list` leaves out and `listStaged` lists.
 */
export class ObjectBlobStore implements BlobStore, BlobStaging {
  readonly staging: BlobStaging = this;
  private readonly where: string;
  /** Chunk indexes by blob name, in order of last use. */
  private readonly indexes = new Map<string, Promise<ChunkIndex | null>>();
  private constructor(
    private readonly os: ObjectStore,
    private readonly bucket: string,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly clock: Clock,
  ) {
    this.where = `Object Store bucket ${bucket}`;
  }

  /**
   * Opens the bucket on a connection (the worker user may). Its stream is verified, never created
   * (that is `sessiond setup`'s): a missing one is a NotFoundError saying to run setup.
   */
  static async open(nc: NatsConnection, options: { bucket?: string; waitMs?: number; clock?: Clock } = {}): Promise<ObjectBlobStore> {
    const bucket = options.bucket ?? BLOB_BUCKET;
    const jsm = await jetstreamManager(nc);
    await manageStream(jsm, blobStreamConfig({ bucket }), {
      serverVersion: nc.info?.version,
      ...(options.waitMs !== undefined ? { waitMs: options.waitMs } : {}),
    });
    // node:crypto's SHA-256 for the library's own digest (its default is a JavaScript one)
    setSha256Backend('native');
    return new ObjectBlobStore(await new Objm(nc).open(bucket, false), bucket, jetstream(nc), jsm, options.clock ?? systemClock);
  }

  async put(source: BlobSource, options: PutBlobOptions): Promise<BlobRef> {
    const intake = new BlobIntake(options);
    if (intake.expectedSha256 === undefined || source instanceof Uint8Array) {
      const { bytes, ref } = await readWhole(source, intake);
      const whole = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes);
          controller.close();
        },
      });
      return this.store(ref, (put) => put(whole));
    }
    const sha256 = intake.expectedSha256;
    const before = await this.keep(sha256);
    if (before === 'kept') {
      // already stored (and marked as put now): the bytes are still read and checked, as a put of new content would be
      for await (const chunk of chunksOf(source)) intake.accept(chunk);
      return intake.finish();
    }
    let ref: BlobRef | undefined;
    const chunks = chunksOf(source)[Symbol.asyncIterator]();
    const stream = new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          try {
            const next = await chunks.next();
            if (next.done) {
              ref = intake.finish();
              controller.close();
            } else {
              intake.accept(next.value);
              controller.enqueue(next.value);
            }
          } catch (err) {
            controller.error(err);
            await chunks.return?.();
          }
        },
        async cancel() {
          await chunks.return?.();
        },
      },
      { highWaterMark: 0 },
    );
    return this.store(
      { sha256, size: 0, mediaType: intake.mediaType },
      (put) => put(stream),
      before,
      () => ref!,
    );
  }

  /**
   * Writes the object named `ref.sha256` unless it is there already, only if its name holds what
   * was read before (nothing, a deleted object, or a corrupt one): a put that loses that race
   * has its chunks purged by the library and finds the winner's object.
   */
  private async store(
    ref: BlobRef,
    write: (put: (stream: ReadableStream<Uint8Array>) => Promise<ObjectInfo>) => Promise<ObjectInfo>,
    known?: ObjectInfo | null | 'kept',
    final: () => BlobRef = () => ref,
  ): Promise<BlobRef> {
    const before = known === undefined ? await this.keep(ref.sha256) : known;
    if (before === 'kept') return ref;
    try {
      await write((stream) =>
        this.os.put(
          { name: ref.sha256, metadata: { mediaType: ref.mediaType, storedAt: String(this.clock.now()) }, options: { max_chunk_size: CHUNK_BYTES } },
          stream,
          {
            previousRevision: before?.revision ?? 0,
          },
        ),
      );
    } catch (err) {
      if (isSessiondError(err)) throw err;
      const now = isWrongLastSequence(err) ? await this.os.info(ref.sha256) : null;
      if (!live(now) || now.digest !== objectDigest(ref.sha256)) throw err;
    }
    return final();
  }

  async get(sha256: string): Promise<Uint8Array> {
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of this.read(sha256)) {
      chunks.push(chunk);
      size += chunk.length;
    }
    if (chunks.length === 1) return chunks[0]!;
    const bytes = new Uint8Array(size);
    let at = 0;
    for (const c of chunks) {
      bytes.set(c, at);
      at += c.length;
    }
    return bytes;
  }

  async *read(sha256: string, range?: BlobRange): AsyncIterable<Uint8Array> {
    checkSha256(sha256);
    if (range !== undefined) {
      yield* this.readRange(sha256, checkRange(range));
      return;
    }
    const result = await this.os.get(sha256);
    if (result === null) throw blobNotFound(sha256, this.where);
    const hash = createHash('sha256');
    let size = 0;
    const reader = result.data.getReader();
    let done = false;
    try {
      for (;;) {
        let next: ReadableStreamReadResult<Uint8Array>;
        try {
          next = await reader.read();
        } catch (err) {
          // the library's own check of the object's digest, or a read that broke off
          if (/digests do not match/.test(messageOf(err))) {
            throw new CorruptDataError(`Blob ${sha256} in ${this.where} is corrupt: ${messageOf(err)}`, { cause: err, details: { sha256 } });
          }
          throw err;
        }
        if (next.done) {
          done = true;
          break;
        }
        hash.update(next.value);
        size += next.value.length;
        yield next.value;
      }
      const failed = await result.error;
      if (failed) throw failed;
    } finally {
      // a reader that stopped early (a read from an offset) stops the library's consumer
      if (!done) await reader.cancel().catch(() => undefined);
      reader.releaseLock();
    }
    const actual = hash.digest('hex');
    if (actual !== sha256) throw blobCorrupt(sha256, actual, size, this.where);
  }

  /**
   * The chunks covering the range, fetched by sequence. A chunk gone (the object deleted or
   * replaced since it was indexed) sends the read back to the meta message: not found, or the new
   * version indexed and read on from where it was (same name, same content).
   */
  private async *readRange(sha256: string, range: BlobRange): AsyncIterable<Uint8Array> {
    let at = -1;
    let end = 0;
    for (let attempt = 1; ; attempt++) {
      const raw = await this.rawMeta(sha256);
      if (raw === null || raw.meta.deleted) throw blobNotFound(sha256, this.where);
      if (raw.meta.digest !== objectDigest(sha256)) throw this.corrupt(sha256, `its object records the digest ${String(raw.meta.digest)}, not this content's`);
      const size = Number(raw.meta.size ?? 0);
      // three tries, each from the meta as it is then: a deleted object is not found, one that stays wrong is corrupt
      if (attempt > 3) throw this.corrupt(sha256, `its chunks are not the ${size} bytes in ${raw.meta.chunks} chunks its object records`);
      if (at < 0) ({ start: at, end } = rangeWithin(range, size, sha256));
      if (at >= end) return;
      const index = await this.chunkIndex(sha256, raw.meta);
      if (index !== null) {
        const subject = `$O.${this.bucket}.C.${index.nuid}`;
        // the chunks of the range are asked for a few at a time, in order
        const last = chunkAt(index.starts, end - 1);
        const ahead: Promise<StoredMsg | null>[] = [];
        let next = chunkAt(index.starts, at);
        for (let i = next; at < end; i++) {
          for (; next <= last && next < i + FETCH_AHEAD; next++) {
            const asked = this.jsm.streams.getMessage(streamOf(this.bucket), { seq: index.seqs[next]! });
            asked.catch(() => undefined);
            ahead.push(asked);
          }
          const m = await ahead.shift()!;
          const [from, to] = [index.starts[i]!, index.starts[i + 1] ?? size];
          if (m === null || m.subject !== subject || m.data.length !== to - from) break;
          const piece = m.data.subarray(at - from, Math.min(end, to) - from);
          at += piece.length;
          yield piece;
        }
        if (at >= end) return;
        // a chunk gone or not as indexed: the object as its meta now says
        this.indexes.delete(sha256);
      }
    }
  }

  private corrupt(sha256: string, why: string): CorruptDataError {
    return new CorruptDataError(`Blob ${sha256} in ${this.where} is corrupt: ${why}. Store the original bytes again to replace it.`, { details: { sha256 } });
  }

  /**
   * The object's chunk index, from the cache or one headers-only pass over its chunk subject;
   * null when the chunks found do not match its meta (purged meanwhile, or not as recorded).
   */
  private async chunkIndex(sha256: string, meta: RawMeta['meta']): Promise<ChunkIndex | null> {
    let found = this.indexes.get(sha256);
    if (found !== undefined) {
      this.indexes.delete(sha256);
      const index = await found.catch(() => null);
      if (index !== null && index.nuid === meta.nuid) {
        this.indexes.set(sha256, found);
        return index;
      }
    }
    found = this.indexChunks(meta);
    this.indexes.set(sha256, found);
    while (this.indexes.size > CHUNK_INDEX_CACHE) this.indexes.delete(this.indexes.keys().next().value!);
    const index = await found.catch((err) => {
      this.indexes.delete(sha256);
      throw err;
    });
    if (index === null) this.indexes.delete(sha256);
    return index;
  }

  private async indexChunks(meta: RawMeta['meta']): Promise<ChunkIndex | null> {
    const chunks = Number(meta.chunks ?? 0);
    const size = Number(meta.size ?? 0);
    const seqs: number[] = [];
    const starts: number[] = [];
    if (chunks === 0) return size === 0 ? { nuid: meta.nuid, seqs, starts } : null;
    const consumer = await this.js.consumers.getPushConsumer(streamOf(this.bucket), {
      filter_subjects: `$O.${this.bucket}.C.${meta.nuid}`,
      headers_only: true,
    });
    let stall: ReturnType<Clock['setTimeout']> | undefined;
    try {
      if ((await consumer.info(true)).num_pending !== chunks) return null;
      const messages = await consumer.consume();
      const watch = () => {
        this.clock.clearTimeout(stall);
        stall = this.clock.setTimeout(() => messages.stop(), INDEX_STALL_MS);
      };
      watch();
      let at = 0;
      for await (const m of messages) {
        watch();
        seqs.push(m.seq);
        starts.push(at);
        at += Number(m.headers?.get('Nats-Msg-Size') ?? Number.NaN);
        if (m.info.pending === 0) break;
      }
      messages.stop();
      return seqs.length === chunks && at === size ? { nuid: meta.nuid, seqs, starts } : null;
    } finally {
      this.clock.clearTimeout(stall);
      await consumer.delete().catch(() => false);
    }
  }

  async has(sha256: string): Promise<boolean> {
    return live(await this.os.info(checkSha256(sha256)));
  }

  async delete(sha256: string): Promise<boolean> {
    if (!live(await this.os.info(checkSha256(sha256)))) return false;
    await this.os.delete(sha256);
    return true;
  }

  /**
   * A put of content the bucket holds: its meta message written again with `storedAt` now, only if
   * it is still the one read (so a concurrent `deleteIfIdle` either lands first, and the put writes
   * the object anew, or finds it young and keeps it). 'kept' when it did; else what the name holds
   * (nothing, a deleted or a corrupt object) for a put to write over.
   */
  private async keep(sha256: string): Promise<'kept' | ObjectInfo | null> {
    for (;;) {
      const info = await this.os.info(sha256);
      if (!live(info) || info.digest !== objectDigest(sha256)) return info;
      const raw = await this.rawMeta(sha256);
      if (raw === null || raw.revision !== info.revision) continue;
      const now = this.clock.now();
      const meta = { ...raw.meta, mtime: new Date(now).toISOString(), metadata: { ...raw.meta.metadata, storedAt: String(now) } };
      if (await this.publishMeta(meta, raw.revision)) return 'kept';
    }
  }

  /** `keep` alone: the meta message written again with `storedAt` now (no chunk is read); false when there is no live object of the right digest. */
  async touch(sha256: string): Promise<boolean> {
    return (await this.keep(checkSha256(sha256))) === 'kept';
  }

  async deleteIfIdle(sha256: string, before: number): Promise<boolean> {
    checkSha256(sha256);
    for (;;) {
      const raw = await this.rawMeta(sha256);
      if (raw === null || raw.meta.deleted || storedAtOf(raw.meta) >= before) return false;
      const gone = { ...raw.meta, deleted: true, size: 0, chunks: 0, digest: '', mtime: new Date(this.clock.now()).toISOString() };
      // a put that marked it since (or wrote it anew) moved the revision: read again
      if (!(await this.publishMeta(gone, raw.revision))) continue;
      await this.jsm.streams.purge(streamOf(this.bucket), { filter: `$O.${this.bucket}.C.${raw.meta.nuid}` });
      return true;
    }
  }

  private metaSubject(name: string): string {
    return `$O.${this.bucket}.M.${Buffer.from(name).toString('base64').replace(/\+/g, '-').replace(/\//g, '_')}`;
  }

  private async rawMeta(name: string): Promise<RawMeta | null> {
    const m = await this.jsm.streams.getMessage(streamOf(this.bucket), { last_by_subj: this.metaSubject(name) });
    return m === null ? null : { meta: m.json<RawMeta['meta']>(), revision: m.seq };
  }

  /** Writes the object's meta message (replacing the earlier ones) if its revision is still `revision`; false when another write came first. */
  private async publishMeta(meta: RawMeta['meta'], revision: number): Promise<boolean> {
    const h = headers();
    h.set('Nats-Rollup', 'sub');
    try {
      await this.js.publish(this.metaSubject(meta.name), JSON.stringify(meta), { headers: h, expect: { lastSubjectSequence: revision } });
      return true;
    } catch (err) {
      if (isWrongLastSequence(err)) return false;
      throw err;
    }
  }

  async *list(): AsyncIterable<StoredBlob> {
    for (const info of await this.os.list()) {
      if (!live(info) || !/^[0-9a-f]{64}$/.test(info.name)) continue;
      yield { sha256: info.name, size: info.size, mediaType: info.metadata?.['mediaType'] ?? 'application/octet-stream', storedAt: storedAtOf(info) };
    }
  }

  async stage(name: string, bytes: Uint8Array): Promise<void> {
    stagedOnly(name);
    await this.os.putBlob({ name, options: { max_chunk_size: CHUNK_BYTES } }, bytes);
  }

  async staged(name: string): Promise<Uint8Array | undefined> {
    stagedOnly(name);
    return (await this.os.getBlob(name)) ?? undefined;
  }

  async unstage(name: string): Promise<boolean> {
    stagedOnly(name);
    if (!live(await this.os.info(name))) return false;
    await this.os.delete(name);
    return true;
  }

  async *listStaged(): AsyncIterable<StagedChunk> {
    for (const info of await this.os.list()) {
      if (!live(info) || !isStagingName(info.name)) continue;
      yield { name: info.name, size: info.size, storedAt: Date.parse(info.mtime) };
    }
  }
}

/** The index of the chunk holding byte `at`: the last start at or before it. */
function chunkAt(starts: number[], at: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= at) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Staging touches staged chunks and grants only, never a blob. */
function stagedOnly(name: string): void {
  if (!isStagingName(name)) throw new Error(`Not a staged chunk's or grant's name: ${JSON.stringify(name)}.`);
}
