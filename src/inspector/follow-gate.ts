/**
 * When the inspector's follow of the log may take its next batch: not while a view is being
 * answered, nor for a short grace after (a page asks for several views at once). A view that waits
 * for the follow itself (a first start, far behind it) steps aside so the follow runs meanwhile.
 */
export class FollowGate {
  private answering = 0;
  private readonly paused: (() => void)[] = [];
  private grace: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly graceMs: number) {}

  /** A view is being answered: the follow waits. */
  enter(): void {
    this.answering++;
  }

  /** A view is answered: the follow goes on after the grace. */
  leave(): void {
    if (--this.answering === 0) this.hold();
  }

  /** A connection opened: a request is coming, the follow waits the grace for it. */
  connected(): void {
    if (this.answering === 0) this.hold();
  }

  /** Resolves when the follow may take its next batch (after any pending I/O: requests come first). */
  turn(): Promise<void> {
    return new Promise((resolve) => setImmediate(() => (this.open() ? resolve() : this.paused.push(resolve))));
  }

  /** `wait`, with this view counted out meanwhile: the follow runs while it waits (for the follow). */
  async aside<T>(wait: Promise<T>): Promise<T> {
    if (--this.answering === 0) this.release();
    try {
      return await wait;
    } finally {
      this.answering++;
    }
  }

  /** Lets the follow go on for good (the inspector is closing). */
  close(): void {
    this.answering = 0;
    this.release();
  }

  private open(): boolean {
    return this.answering === 0 && this.grace === undefined;
  }

  private hold(): void {
    clearTimeout(this.grace);
    this.grace = setTimeout(() => this.release(), this.graceMs);
  }

  private release(): void {
    clearTimeout(this.grace);
    this.grace = undefined;
    if (this.answering === 0) for (const go of this.paused.splice(0)) go();
  }
}
