/**
 * At most `max` turns at once in one worker (`maxRunningTurns`). A session that finds no free slot
 * is not claimed (it holds no lease, so another worker may take it) and waits here in order; a
 * slot that frees is handed to the first one waiting, which is woken. A session that just ran a
 * turn goes behind those waiting, so one busy session cannot keep a slot.
 */
export class TurnSlots {
  private running = 0;
  /** Sessions that found no slot, first come first. */
  private readonly waiting = new Set<string>();
  /** Sessions handed a freed slot and woken, not yet in their turn. */
  private readonly handed = new Set<string>();

  constructor(
    readonly max: number,
    private readonly wake: (sessionId: string) => void,
  ) {}

  /** A slot for the session's next turn; false when none is free (the session waits, woken when one is). */
  take(sessionId: string): boolean {
    if (this.handed.delete(sessionId)) return true;
    if (this.running < this.max) {
      this.running++;
      return true;
    }
    this.waiting.add(sessionId);
    return false;
  }

  /** A turn ended: its slot goes to the first session waiting, or is free. */
  release(): void {
    const next = this.waiting.values().next();
    if (next.done) {
      this.running--;
      return;
    }
    this.waiting.delete(next.value);
    this.handed.add(next.value);
    this.wake(next.value);
  }

  /** The session is no longer driven here: a slot handed to it and not taken is released. */
  done(sessionId: string): void {
    if (this.handed.delete(sessionId)) this.release();
  }

  /** Turns running (or about to) and sessions waiting for a slot. */
  get stats(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.size };
  }
}
