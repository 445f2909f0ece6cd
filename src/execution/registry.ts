/**
 * A worker's registry of the sessions it is driving right now, a plain map: `begin` when a drive
 * loop starts, `attach` when a claim is held and a runner runs, `detach` when the turn ends, `end`
 * when the loop stops (and resolves the session's `whenIdle` waiters). O(1) a change.
 */

export interface LocalRun {
  readonly sessionId: string;
  readonly executionId: string | null;
  readonly controller: AbortController | null;
}

export class RunRegistry {
  /** Each entry is replaced, never changed: a run read stays as it was read. */
  private readonly runs = new Map<string, LocalRun>();
  /** Who waits for each session to go idle: resolved by `end`. */
  private readonly idleWaiters = new Map<string, (() => void)[]>();

  begin(sessionId: string): void {
    this.runs.set(sessionId, { sessionId, executionId: null, controller: null });
  }

  attach(sessionId: string, executionId: string, controller: AbortController): void {
    this.runs.set(sessionId, { sessionId, executionId, controller });
  }

  detach(sessionId: string): void {
    if (this.runs.has(sessionId)) this.runs.set(sessionId, { sessionId, executionId: null, controller: null });
  }

  end(sessionId: string): void {
    if (!this.runs.delete(sessionId)) return;
    const waiters = this.idleWaiters.get(sessionId);
    if (!waiters) return;
    this.idleWaiters.delete(sessionId);
    for (const resolve of waiters) resolve();
  }

  get(sessionId: string): LocalRun | undefined {
    return this.runs.get(sessionId);
  }

  all(): IterableIterator<LocalRun> {
    return this.runs.values();
  }

  /** How many sessions here hold a claim with a runner running. */
  activeTurns(): number {
    let n = 0;
    for (const run of this.runs.values()) if (run.executionId) n++;
    return n;
  }

  /** Resolves once the registry holds no entry for the session. */
  whenIdle(sessionId: string): Promise<void> {
    return new Promise((resolve) => {
      if (!this.runs.has(sessionId)) return resolve();
      const waiters = this.idleWaiters.get(sessionId);
      if (waiters) waiters.push(resolve);
      else this.idleWaiters.set(sessionId, [resolve]);
    });
  }
}

export function createRunRegistry(): RunRegistry {
  return new RunRegistry();
}

export function localRun(registry: RunRegistry, sessionId: string): LocalRun | undefined {
  return registry.get(sessionId);
}

/** Resolves once the registry holds no entry for the session. */
export function whenIdle(registry: RunRegistry, sessionId: string): Promise<void> {
  return registry.whenIdle(sessionId);
}
