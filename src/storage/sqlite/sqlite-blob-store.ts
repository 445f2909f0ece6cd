/**
 * Blobs in the `blob` table (migration 018) of the log's own SQLite file, one row per content.
 * `putSync` writes inside a better-sqlite3 transaction the caller holds, so a blob and the append
 * that references it commit together (or neither does); `put` is the port's method around it.
 * A row holds the whole blob (SQLite handles rows of 64 MiB), so a put holds it in memory once.
 * `time_created` is when the content was last put (a put of stored content moves it forward).
 * A ranged read hands over only its bytes (`substr` on the column), unhashed. SQLite still loads
 * the whole value to take the substring (about 70 ms for 64 MiB on a small machine): cheaper than
 * a whole read, not O(range); storing blobs in pieces would make it so (better-sqlite3 has no
 * incremental blob handle).
 */
import {
  BlobIntake,
  blobCorrupt,
  blobNotFound,
  checkRange,
  checkSha256,
  rangeWithin,
  readWhole,
  sha256Hex,
  type BlobRange,
  type BlobRef,
  type BlobSource,
  type BlobStore,
  type PutBlobOptions,
  type StoredBlob,
} from '../../blobs/blob-store.ts';
import type { Clock } from '../../clock.ts';
import type { Db } from './database.ts';

const WHERE = 'the SQLite blob table';
/** Rows per page of `list` (a page is read, then the next, so the connection stays free between them). */
const LIST_PAGE = 500;
/** Chunk size of `read`. */
const READ_CHUNK = 1024 * 1024;

export class SqliteBlobStore implements BlobStore {
  private readonly stmts;

  constructor(
    db: Db,
    private readonly clock: Clock,
  ) {
    this.stmts = {
      insert: db.prepare(
        'INSERT INTO blob (sha256, size, media_type, data, time_created) VALUES (?, ?, ?, ?, ?) ON CONFLICT (sha256) DO UPDATE SET time_created = MAX(time_created, excluded.time_created)',
      ),
      data: db.prepare('SELECT data FROM blob WHERE sha256 = ?').pluck(),
      // substr counts from 1; a length past the end stops at it (the range is checked against size after)
      part: db.prepare('SELECT length(data) AS size, substr(data, ? + 1, ?) AS part FROM blob WHERE sha256 = ?'),
      has: db.prepare('SELECT 1 FROM blob WHERE sha256 = ?').pluck(),
      remove: db.prepare('DELETE FROM blob WHERE sha256 = ?'),
      touch: db.prepare('UPDATE blob SET time_created = MAX(time_created, ?) WHERE sha256 = ?'),
      removeIdle: db.prepare('DELETE FROM blob WHERE sha256 = ? AND time_created < ?'),
      page: db.prepare('SELECT sha256, size, media_type AS mediaType, time_created AS storedAt FROM blob WHERE sha256 > ? ORDER BY sha256 LIMIT ?'),
    };
  }

  /**
   * Checks and inserts the bytes now, synchronously: call it inside `db.transaction(...)` to commit
   * the blob with what references it. Throws (inserting nothing) what `put` refuses.
   */
  putSync(bytes: Uint8Array, options: PutBlobOptions): BlobRef {
    const intake = new BlobIntake(options);
    intake.accept(bytes);
    const ref = intake.finish();
    this.stmts.insert.run(ref.sha256, ref.size, ref.mediaType, bytes, this.clock.now());
    return ref;
  }

  async put(source: BlobSource, options: PutBlobOptions): Promise<BlobRef> {
    const { bytes, ref } = await readWhole(source, new BlobIntake(options));
    this.stmts.insert.run(ref.sha256, ref.size, ref.mediaType, bytes, this.clock.now());
    return ref;
  }

  async get(sha256: string): Promise<Uint8Array> {
    checkSha256(sha256);
    const data = this.stmts.data.get(sha256) as Buffer | undefined;
    if (data === undefined) throw blobNotFound(sha256, WHERE);
    const actual = sha256Hex(data);
    if (actual !== sha256) throw blobCorrupt(sha256, actual, data.length, WHERE);
    return new Uint8Array(data.buffer, data.byteOffset, data.length);
  }

  async *read(sha256: string, range?: BlobRange): AsyncIterable<Uint8Array> {
    const bytes = range === undefined ? await this.get(sha256) : this.part(sha256, range);
    for (let at = 0; at < bytes.length; at += READ_CHUNK) yield bytes.subarray(at, at + READ_CHUNK);
  }

  private part(sha256: string, range: BlobRange): Uint8Array {
    checkSha256(sha256);
    const { offset, length } = checkRange(range);
    const row = this.stmts.part.get(offset, length ?? Number.MAX_SAFE_INTEGER, sha256) as { size: number; part: Buffer | null } | undefined;
    if (row === undefined) throw blobNotFound(sha256, WHERE);
    const { start, end } = rangeWithin(range, row.size, sha256);
    const part = row.part ?? Buffer.alloc(0);
    return new Uint8Array(part.buffer, part.byteOffset, Math.min(part.length, end - start));
  }

  async has(sha256: string): Promise<boolean> {
    return this.stmts.has.get(checkSha256(sha256)) !== undefined;
  }

  async delete(sha256: string): Promise<boolean> {
    return this.stmts.remove.run(checkSha256(sha256)).changes > 0;
  }

  /** One statement: a put of the same content (which moves `time_created`) is before it or after it. */
  async deleteIfIdle(sha256: string, before: number): Promise<boolean> {
    return this.stmts.removeIdle.run(checkSha256(sha256), before).changes > 0;
  }

  /** One statement, as `deleteIfIdle` is: the removal is before it (nothing to touch) or after it (the blob is young). */
  async touch(sha256: string): Promise<boolean> {
    return this.stmts.touch.run(this.clock.now(), checkSha256(sha256)).changes > 0;
  }

  async *list(): AsyncIterable<StoredBlob> {
    for (let after = ''; ; ) {
      const rows = this.stmts.page.all(after, LIST_PAGE) as StoredBlob[];
      yield* rows;
      if (rows.length < LIST_PAGE) return;
      after = rows.at(-1)!.sha256;
    }
  }
}
