/**
 * A worker's registry of the sessions it is driving right now, as an @xstate/store: `begin` when a
 * drive loop starts, `attach` when a claim is held and a runner runs, `detach` when the turn ends,
 * `end` when the loop stops. `awaitIdle` and status reads subscribe to it.
 */
import { createStore } from '@xstate/store';

export interface LocalRun {
  sessionId: string;
  executionId: string | null;
  controller: AbortController | null;
}

export function createRunRegistry() {
  return createStore({
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
      end: (ctx, e: { sessionId: string }) => {
        const { [e.sessionId]: _gone, ...runs } = ctx.runs;
        return { runs };
      },
    },
  });
}

export type RunRegistry = ReturnType<typeof createRunRegistry>;

export function localRun(registry: RunRegistry, sessionId: string): LocalRun | undefined {
  return registry.getSnapshot().context.runs[sessionId];
}

/** Resolves once the registry holds no entry for the session. */
export function whenIdle(registry: RunRegistry, sessionId: string): Promise<void> {
  return new Promise((resolve) => {
    if (!localRun(registry, sessionId)) return resolve();
    const sub = registry.subscribe((snap) => {
      if (!snap.context.runs[sessionId]) {
        sub.unsubscribe();
        resolve();
      }
    });
  });
}
