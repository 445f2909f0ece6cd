/**
 * When a follow that runs inside a busy worker (the inspector's index, kept by `sessiond start`) may
 * take its next batch: at once while the rest of the process leaves the event loop mostly idle;
 * when it does not, once its last batch is at most `share` of the time since (and `floorMs` at
 * least), so under load the follow takes a small share of the loop and falls behind, never stops.
 * The load is sampled while the follow waits, so its own work is not counted; a sample that found
 * the loop idle lets batches through for `trustMs` before the next.
 */
import { performance } from 'node:perf_hooks';
import { sleep, type Clock } from '../clock.ts';

/** Cumulative milliseconds the event loop was busy (as `performance.eventLoopUtilization()` counts). */
export type LoopBusy = () => number;

export interface IdleGateOptions {
  clock: Clock;
  /** Share of a sample the rest of the process may keep the loop busy for the follow to go on (default 0.5). */
  busy?: number;
  /** The sample, in ms (default 20). */
  sampleMs?: number;
  /** How long an idle sample lets batches through (default 100 ms). */
  trustMs?: number;
  /** Under load, the share of the time the follow's batches may take (default 0.02)... */
  share?: number;
  /** ...and never more than one batch in this many ms (default 1,000). */
  floorMs?: number;
  loopBusy?: LoopBusy;
}

export class IdleGate {
  private readonly busy: number;
  private readonly sampleMs: number;
  private readonly trustMs: number;
  private readonly floorMs: number;
  private readonly share: number;
  private readonly loopBusy: LoopBusy;
  private readonly closed = new AbortController();
  /** When a sample last found the loop idle, and when a batch last went. */
  private idleAt = Number.NEGATIVE_INFINITY;
  private wentAt: number;

  constructor(private readonly options: IdleGateOptions) {
    this.busy = options.busy ?? 0.5;
    this.sampleMs = options.sampleMs ?? 20;
    this.trustMs = options.trustMs ?? 100;
    this.floorMs = options.floorMs ?? 1_000;
    this.share = options.share ?? 0.02;
    this.loopBusy = options.loopBusy ?? (() => performance.eventLoopUtilization().active);
    this.wentAt = options.clock.now();
  }

  /** Resolves when the follow may take its next batch. */
  async turn(): Promise<void> {
    const clock = this.options.clock;
    await new Promise<void>((resolve) => setImmediate(resolve)); // pending I/O (a prompt, a wake) goes first
    // the follow's own stretch: from the last batch let through to this call
    const spacing = Math.max(this.floorMs, (clock.now() - this.wentAt) / this.share);
    while (!this.closed.signal.aborted && clock.now() - this.idleAt >= this.trustMs && clock.now() - this.wentAt < spacing) {
      const before = this.loopBusy();
      const from = clock.now();
      await sleep(clock, this.sampleMs, this.closed.signal);
      const spent = clock.now() - from;
      if (spent > 0 && (this.loopBusy() - before) / spent < this.busy) this.idleAt = clock.now();
    }
    this.wentAt = clock.now();
  }

  /** Lets every waiting and later turn go at once (the follow is closing). */
  close(): void {
    this.closed.abort();
  }
}
