/**
 * A blob store whose puts count against the worker's `BlobMemory` while they run: a put of bytes
 * reserves their size first, a put of chunks reserves each chunk as it is read; all is released when
 * the put ends. Reads, whole or ranged, pass through and reserve nothing (who reads a blob whole
 * reserves its size: `RunContext.blob`; a ranged read holds about one chunk of the range at a time).
 */
import type { BlobMemory } from './blob-memory.ts';
import { chunksOf, type BlobRange, type BlobRef, type BlobSource, type BlobStore, type PutBlobOptions, type StoredBlob } from './blob-store.ts';

export class MeteredBlobStore implements BlobStore {
  constructor(
    private readonly inner: BlobStore,
    readonly memory: BlobMemory,
  ) {}

  async put(source: BlobSource, options: PutBlobOptions): Promise<BlobRef> {
    const releases: (() => void)[] = [];
    try {
      if (source instanceof Uint8Array) {
        releases.push(await this.memory.reserve(source.length, `A blob of ${options?.mediaType ?? 'unknown type'} being stored`));
        return await this.inner.put(source, options);
      }
      const memory = this.memory;
      const counted = async function* () {
        for await (const chunk of chunksOf(source)) {
          releases.push(await memory.reserve(chunk.length, `A blob of ${options?.mediaType ?? 'unknown type'} being stored`));
          yield chunk;
        }
      };
      return await this.inner.put(counted(), options);
    } finally {
      for (const release of releases) release();
    }
  }

  get(sha256: string): Promise<Uint8Array> {
    return this.inner.get(sha256);
  }

  read(sha256: string, range?: BlobRange): AsyncIterable<Uint8Array> {
    return this.inner.read(sha256, range);
  }

  has(sha256: string): Promise<boolean> {
    return this.inner.has(sha256);
  }

  delete(sha256: string): Promise<boolean> {
    return this.inner.delete(sha256);
  }

  deleteIfIdle(sha256: string, before: number): Promise<boolean> {
    return this.inner.deleteIfIdle(sha256, before);
  }

  touch(sha256: string): Promise<boolean> {
    return this.inner.touch(sha256);
  }

  list(): AsyncIterable<StoredBlob> {
    return this.inner.list();
  }

  get staging() {
    return this.inner.staging;
  }
}
