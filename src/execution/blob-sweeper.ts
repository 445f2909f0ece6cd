/**
 * The worker's blob sweep: every `intervalMs` (first one interval after start), removes the blobs no
 * event references that were last put more than `graceMs` ago (src/sessions/blob-sweep.ts over the
 * worker's projection). Any number of workers may sweep: a removal is `deleteIfIdle`, one step
 * against a put of the same content. A failed pass is a notice; the next one tries again.
 */
import type { BlobStore } from '../blobs/blob-store.ts';
import { DEFAULT_BLOB_SWEEP_INTERVAL_MS, checkGraceMs, type BlobSweepReport } from '../blobs/sweep.ts';
import type { Clock, TimerHandle } from '../clock.ts';
import { messageOf } from '../errors.ts';
import type { EventLog } from '../events/event-log.ts';
import { wholeNumber } from '../options.ts';
import { sweepProjectedBlobs } from '../sessions/blob-sweep.ts';
import type { Db } from '../storage/sqlite/database.ts';

export interface BlobSweepSettings {
  /** How long an unreferenced blob is kept after its content was last put (default one hour). */
  graceMs?: number;
  /** Time between passes (default ten minutes). */
  intervalMs?: number;
  /** After each pass that removed something or failed. */
  onSwept?: (report: BlobSweepReport) => void;
  onError?: (message: string) => void;
}

export class BlobSweeper {
  readonly graceMs: number;
  readonly intervalMs: number;
  private timer: TimerHandle | undefined;
  private running: Promise<BlobSweepReport> | undefined;
  private stopped = false;

  constructor(
    private readonly db: Db,
    private readonly log: EventLog,
    private readonly store: BlobStore,
    private readonly clock: Clock,
    private readonly settings: BlobSweepSettings = {},
  ) {
    this.graceMs = checkGraceMs(settings.graceMs, 'blob sweep option graceMs');
    this.intervalMs = wholeNumber('BlobSweeper', 'intervalMs', settings.intervalMs, DEFAULT_BLOB_SWEEP_INTERVAL_MS, 1, 'milliseconds');
  }

  start(): void {
    this.stopped = false;
    const tick = async () => {
      if (this.stopped) return;
      await this.sweep().then(
        (r) => {
          if (r.orphaned.length > 0 || r.errors.length > 0) this.settings.onSwept?.(r);
        },
        (err: unknown) => this.settings.onError?.(`the blob sweep failed (${messageOf(err)}); it runs again in ${this.intervalMs} ms`),
      );
      if (!this.stopped) this.timer = this.clock.setTimeout(() => void tick(), this.intervalMs);
    };
    this.timer = this.clock.setTimeout(() => void tick(), this.intervalMs);
  }

  /** One pass now. Concurrent calls share the pass in progress. */
  sweep(): Promise<BlobSweepReport> {
    this.running ??= sweepProjectedBlobs(this.db, this.log, this.store, { now: this.clock.now(), graceMs: this.graceMs }).finally(
      () => (this.running = undefined),
    );
    return this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }
}
