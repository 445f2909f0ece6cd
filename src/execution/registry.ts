/**
 * A worker's registry of the sessions it is driving right now, as an @xstate/store: `begin` when a
 * drive loop starts, `attach` when a claim is held and a runner runs, `detach` when the turn ends,
 * `end` when the loop stops (and resolves the session's `whenIdle` waiters). Status reads use its snapshot.
 */
import { createStore } from '@xstate/store';

export interface LocalRun {
  sessionId: string;
  executionId: string | null;
  controller: AbortController | null;
}

export function createRunRegistry() {
  /** Who waits for each session to go idle: resolved by `end`, not by a subscription each (every update would call them all). */
  const idleWaiters = new Map<string, (() => void)[]>();
  const store = createStore({
    context: { runs: {} as Record<string, LocalRun> },
    on: {
      begin: (ctx, e: { sessionId: string }) => ({ runs: { ...ctx.runs, [e.sessionId]: { sessionId: e.sessionId, executionId: null, controller: null } } }),
      attach: (ctx, e: { sessionId: string; executionId: string; controller: AbortController }) => ({
        runs: { ...ctx.runs, [e.sessionId]: { sessionId: e.sessionId, executionId: e.executionId, controller: e.controller } },
      }),
      detach: (ctx, e: { sessionId: string }) => {
        const run = ctx.runs[e.sessionId];
        return run ? { runs: { ...ctx.runs, [e.sessionId]: { ...run, executionId: null, controller: null } } } : ctx;
      },
      end: (ctx, e: { sessionId: string }, enqueue) => {
        if (!ctx.runs[e.sessionId]) return ctx;
        const { [e.sessionId]: _gone, ...runs } = ctx.runs;
        const waiters = idleWaiters.get(e.sessionId);
        if (waiters) {
          idleWaiters.delete(e.sessionId);
          enqueue.effect(() => {
            for (const resolve of waiters) resolve();
          });
        }
        return { runs };
      },
    },
  });
  return Object.assign(store, { idleWaiters });
}

export type RunRegistry = ReturnType<typeof createRunRegistry>;

export function localRun(registry: RunRegistry, sessionId: string): LocalRun | undefined {
  return registry.getSnapshot().context.runs[sessionId];
}

/** Resolves once the registry holds no entry for the session. */
export function whenIdle(registry: RunRegistry, sessionId: string): Promise<void> {
  return new Promise((resolve) => {
    if (!localRun(registry, sessionId)) return resolve();
    const waiters = registry.idleWaiters.get(sessionId);
    if (waiters) waiters.push(resolve);
    else registry.idleWaiters.set(sessionId, [resolve]);
  });
}
