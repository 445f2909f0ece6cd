/**
 * Wakes waiters when the database changes: at once for commits made through this connection
 * (`notify()`), and by polling `PRAGMA data_version` for commits from other connections or
 * processes. The poll backs off from 5 ms to `maxPollMs` while nothing changes and only runs while
 * someone is subscribed.
 */
import type { Db } from './database.ts';
import type { Clock, TimerHandle } from '../../clock.ts';

const MIN_POLL_MS = 5;

export class ChangeNotifier {
  private waiters: (() => void)[] = [];
  private timer: TimerHandle | undefined;
  private interval = MIN_POLL_MS;
  private lastVersion: number;
  private users = 0;
  private stopped = false;
  private readonly dataVersion;

  constructor(
    readonly db: Db,
    private readonly maxPollMs: number,
    private readonly clock: Clock,
  ) {
    this.dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.lastVersion = this.dataVersion.get() as number;
  }

  /** A promise that resolves at the next change (or wake-up). */
  nextChange(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  notify(): void {
    this.interval = MIN_POLL_MS;
    this.wakeAll();
  }

  wakeAll(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  retain(): void {
    this.users++;
    if (this.users === 1) this.schedule();
  }

  release(): void {
    this.users = Math.max(0, this.users - 1);
    if (this.users === 0 && this.timer) {
      this.clock.clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  stop(): void {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.wakeAll();
  }

  private schedule(): void {
    if (this.stopped || this.users === 0) return;
    this.timer = this.clock.setTimeout(() => this.poll(), this.interval);
  }

  private poll(): void {
    this.timer = undefined;
    if (this.stopped) return;
    let version = this.lastVersion;
    try {
      version = this.dataVersion.get() as number;
    } catch {
      // the database is busy or closing; try again later
    }
    if (version !== this.lastVersion) {
      this.lastVersion = version;
      this.notify();
    } else {
      this.interval = Math.min(this.maxPollMs, this.interval * 2);
    }
    this.schedule();
  }
}
