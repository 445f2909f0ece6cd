/** Wall-clock milliseconds since the epoch; injected so leases and timers are testable. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to. */
export class ManualClock implements Clock {
  private current: number;
  constructor(start = 0) {
    this.current = start;
  }
  now(): number {
    return this.current;
  }
  advance(ms: number): number {
    this.current += ms;
    return this.current;
  }
  set(ms: number): void {
    this.current = ms;
  }
}
