/**
 * The blobs one turn read whole for its model calls, kept until the turn ends: the runner sends the
 * whole conversation at each step, so each blob is read from the store once a turn, not once a
 * step. Each is reserved against the worker's `BlobMemory` before it is read and released with
 * the turn (`release`), so what the cache holds is what the bound counts.
 */
import { CorruptDataError } from '../errors.ts';
import type { BlobMemory } from './blob-memory.ts';
import type { BlobRef, BlobStore } from './blob-store.ts';

export class TurnBlobs {
  private readonly cached = new Map<string, Promise<Uint8Array>>();
  private releases: (() => void)[] = [];
  private reserved = 0;

  constructor(private readonly memory: BlobMemory | undefined) {}

  /** The blob's bytes: read once (its size reserved first, waiting for room), then from the cache. */
  read(store: BlobStore, ref: BlobRef): Promise<Uint8Array> {
    const known = this.cached.get(ref.sha256);
    if (known) return known;
    const reading = this.load(store, ref);
    this.cached.set(ref.sha256, reading);
    reading.catch(() => this.cached.delete(ref.sha256));
    return reading;
  }

  private async load(store: BlobStore, ref: BlobRef): Promise<Uint8Array> {
    let release = () => {};
    if (this.memory) {
      const reservation = await this.memory.reserve(ref.size, `Blob ${ref.sha256} (${ref.mediaType})`, this.reserved);
      this.reserved += ref.size;
      let done = false;
      release = () => {
        if (done) return;
        done = true;
        reservation();
        this.reserved -= ref.size;
      };
      this.releases.push(release);
    }
    try {
      const bytes = await store.get(ref.sha256);
      if (bytes.length !== ref.size) {
        throw new CorruptDataError(`Blob ${ref.sha256} is ${bytes.length} bytes, but the event that references it says ${ref.size}: the reference is wrong.`, {
          details: { sha256: ref.sha256, size: bytes.length, referenced: ref.size },
        });
      }
      return bytes;
    } catch (err) {
      release(); // nothing held
      throw err;
    }
  }

  /** Ends the turn's hold: every reservation released, the cache emptied. */
  release(): void {
    const releases = this.releases;
    this.releases = [];
    this.cached.clear();
    for (const r of releases) r();
  }
}
