/**
 * An EventLog that tells an observer about each append it makes (what was committed, or why not,
 * and how long it took), and passes everything else through. Decorators of the log build on it:
 * publishing each commit live (publishing-log.ts) and counting appends for metrics.
 *
 *   const log = observeAppends(inner, { committed: (events, ms) => ..., failed: (err, ms) => ... });
 */
import type { EventLog, ReadPagesOptions, SubscribeOptions, Subscription } from './event-log.ts';
import type { DraftEvent, SessionEvent } from './envelope.ts';

export interface AppendObserver {
  /** An append was acknowledged: the committed events (a recognised retry included). */
  committed?(events: SessionEvent[], ms: number): void;
  /** An append was refused or failed (a sequence conflict, a closed log, an I/O error). */
  failed?(err: unknown, ms: number): void;
}

export class ObservedEventLog implements EventLog {
  readonly name: string;

  constructor(
    readonly inner: EventLog,
    private readonly observer: AppendObserver,
  ) {
    this.name = inner.name;
  }

  async append(sessionId: string, expectedSeq: number, drafts: DraftEvent[]): Promise<SessionEvent[]> {
    const t0 = performance.now();
    let committed: SessionEvent[];
    try {
      committed = await this.inner.append(sessionId, expectedSeq, drafts);
    } catch (err) {
      this.observer.failed?.(err, performance.now() - t0);
      throw err;
    }
    this.observer.committed?.(committed, performance.now() - t0);
    return committed;
  }

  readSession(sessionId: string, options?: { afterSeq?: number; limit?: number }): Promise<SessionEvent[]> {
    return this.inner.readSession(sessionId, options);
  }

  lastSeq(sessionId: string): Promise<number> {
    return this.inner.lastSeq(sessionId);
  }

  readAll(options?: { after?: number; limit?: number }): Promise<SessionEvent[]> {
    return this.inner.readAll(options);
  }

  readPages(options?: ReadPagesOptions): AsyncIterable<SessionEvent[]> {
    return this.inner.readPages(options);
  }

  head(): Promise<number> {
    return this.inner.head();
  }

  subscribe(options: SubscribeOptions): Subscription {
    return this.inner.subscribe(options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** `log`, telling `observer` about each of its appends. */
export function observeAppends(log: EventLog, observer: AppendObserver): EventLog {
  return new ObservedEventLog(log, observer);
}
