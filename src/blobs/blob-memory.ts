/**
 * The worker's bound on blob bytes held in memory at once (`maxBlobMemoryBytes`): whoever reads a
 * blob whole (for a model call) or puts one reserves its size first and releases it when done. A
 * reservation that does not fit waits, first come first served, for at most `waitMs`, then fails
 * saying what to do; one larger than the whole bound fails at once.
 *
 *   const release = await memory.reserve(ref.size, `blob ${ref.sha256}`);
 *   try { ... } finally { release(); }
 */
import { systemClock, type Clock, type TimerHandle } from '../clock.ts';
import { ErrorCode, SessiondError } from '../errors.ts';

/** How long a reservation waits for room before it fails. */
export const DEFAULT_BLOB_MEMORY_WAIT_MS = 60_000;

interface Waiter {
  bytes: number;
  grant: () => void;
  timer: TimerHandle | undefined;
}

export class BlobMemory {
  private used = 0;
  private readonly waiting: Waiter[] = [];

  constructor(
    /** The most bytes held at once. */
    readonly limitBytes: number,
    private readonly options: { waitMs?: number; clock?: Clock } = {},
  ) {}

  /** Bytes reserved now. */
  get held(): number {
    return this.used;
  }

  /** Reservations waiting for room now. */
  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Reserves `bytes` (waiting for room) and returns the release (idempotent). `what` names the blob
   * in the errors. `alsoHeld`: bytes the caller itself already holds, which no wait can free: a
   * reservation that could only fit once they are released fails at once instead of waiting on itself.
   */
  async reserve(bytes: number, what: string, alsoHeld = 0): Promise<() => void> {
    if (bytes + alsoHeld > this.limitBytes) {
      throw new SessiondError(
        ErrorCode.LimitExceeded,
        `${what} needs ${bytes} bytes in memory${alsoHeld > 0 ? ` beside the ${alsoHeld} this turn already holds` : ''}, over the worker's limit of ${this.limitBytes} bytes of blobs held at once: raise it (sessiond start --max-blob-memory-bytes), or send fewer or smaller images and files in one conversation.`,
        { details: { bytes, alsoHeld, maxBlobMemoryBytes: this.limitBytes } },
      );
    }
    if (this.waiting.length === 0 && this.used + bytes <= this.limitBytes) {
      this.used += bytes;
      return this.releaser(bytes);
    }
    const clock = this.options.clock ?? systemClock;
    const waitMs = this.options.waitMs ?? DEFAULT_BLOB_MEMORY_WAIT_MS;
    await new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { bytes, grant: resolve, timer: undefined };
      waiter.timer = clock.setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        reject(
          new SessiondError(
            ErrorCode.Timeout,
            `${what} waited ${waitMs} ms for ${bytes} bytes of room under the worker's limit of ${this.limitBytes} bytes of blobs held at once (${this.used} held by other turns and uploads): retry later, or raise the limit (sessiond start --max-blob-memory-bytes).`,
            { details: { bytes, held: this.used, maxBlobMemoryBytes: this.limitBytes, waitMs } },
          ),
        );
        this.grantWaiting(); // a large waiter gone may let smaller ones behind it in
      }, waitMs);
      this.waiting.push(waiter);
    });
    return this.releaser(bytes);
  }

  private releaser(bytes: number): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used -= bytes;
      this.grantWaiting();
    };
  }

  /** Grants the waiters that fit, in order (the first that does not fit holds the others back). */
  private grantWaiting(): void {
    const clock = this.options.clock ?? systemClock;
    while (this.waiting.length > 0 && this.used + this.waiting[0]!.bytes <= this.limitBytes) {
      const next = this.waiting.shift()!;
      clock.clearTimeout(next.timer);
      this.used += next.bytes;
      next.grant();
    }
  }
}
