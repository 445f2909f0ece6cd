/**
 * Takes items from an async iterator in runs of what is ready: the first is waited for, the next join
 * only while they come without waiting for I/O, up to `max`. A subscriber catching up gets its
 * backlog in large runs; one caught up gets each item at once, alone.
 */
const TICK = Symbol('tick');

export class ReadyRuns<T> {
  /** A `next()` of the source that lost the race to the next turn: the first item of the next run. */
  private ahead: Promise<IteratorResult<T>> | undefined;

  constructor(private readonly source: AsyncIterator<T>) {}

  /**
   * Ends the source, as leaving a `for await` does (its `return()`): a source left holding items it
   * has not handed over stays suspended otherwise, and nats.js's consumer messages finish their
   * close only once their iterator is done (a worker's close waited on it forever).
   */
  end(): void {
    void this.source.return?.().catch(() => undefined);
  }

  /** The next run: at least one item, or none once the source has ended. */
  async next(max: number): Promise<T[]> {
    const run: T[] = [];
    let turn: Promise<typeof TICK> | undefined;
    while (run.length < max) {
      const next = this.ahead ?? this.source.next();
      this.ahead = undefined;
      const result = run.length === 0 ? await next : await Promise.race([next, (turn ??= nextTurn())]);
      if (result === TICK) {
        this.ahead = next;
        break;
      }
      if (result.done) break;
      run.push(result.value);
    }
    return run;
  }
}

function nextTurn(): Promise<typeof TICK> {
  return new Promise((resolve) => setImmediate(() => resolve(TICK)));
}
