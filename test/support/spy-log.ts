/**
 * An event log with hooks around it, for tests that watch or disturb its I/O: `beforeAppend` runs
 * before each append (it may throw, as a locked database or a dead worker would, or wait, as a slow
 * disk would); `afterAppend` after each append that committed; `afterRead` sees what each
 * `readSession` returned; `afterBatch` what each batch of a subscription delivered (and `subscribed`
 * the position each subscription started after). Everything else goes to the log untouched.
 */
import type { EventLog } from '../../src/events/event-log.ts';
import type { DraftEvent, SessionEvent } from '../../src/events/envelope.ts';

export interface LogHooks {
  beforeAppend?: (drafts: DraftEvent[], sessionId: string) => void | Promise<void>;
  afterAppend?: (drafts: DraftEvent[], sessionId: string) => void;
  afterRead?: (events: SessionEvent[]) => void;
  afterBatch?: (events: SessionEvent[]) => void;
  subscribed?: (after: number) => void;
}

export function spyLog(inner: EventLog, hooks: LogHooks): EventLog {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'append' && (hooks.beforeAppend || hooks.afterAppend)) {
        return async (sessionId: string, expectedSeq: number, drafts: DraftEvent[]) => {
          await hooks.beforeAppend?.(drafts, sessionId);
          const appended = await target.append(sessionId, expectedSeq, drafts);
          hooks.afterAppend?.(drafts, sessionId);
          return appended;
        };
      }
      if (prop === 'readSession' && hooks.afterRead) {
        return async (...args: Parameters<EventLog['readSession']>) => {
          const events = await target.readSession(...args);
          hooks.afterRead!(events);
          return events;
        };
      }
      if (prop === 'subscribe' && (hooks.afterBatch || hooks.subscribed)) {
        return (options: Parameters<EventLog['subscribe']>[0]) => {
          hooks.subscribed?.(options.after ?? 0);
          return target.subscribe({
            ...options,
            onBatch: (events) => {
              hooks.afterBatch?.(events);
              return options.onBatch(events);
            },
          });
        };
      }
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
