/** `Sessions.follow` on an event log: read with `readSession`, listen with `subscribe` from the head. */
import { validateId } from '../ids.ts';
import type { EventLog } from '../events/event-log.ts';
import { followSession } from './follow.ts';
import type { EventSubscription, FollowOptions, SessionEventHandler } from './sessions.ts';

export function followLog(log: EventLog, sessionId: string, handler: SessionEventHandler, options: FollowOptions = {}): Promise<EventSubscription> {
  validateId(sessionId, 'session id');
  return followSession(
    {
      read: (id, afterSeq) => log.readSession(id, { afterSeq }),
      async listen(id, onEvent) {
        const sub = log.subscribe({
          after: await log.head(),
          onBatch: (events) => {
            for (const e of events) if (e.sessionId === id) onEvent(e);
          },
          ...(options.onError ? { onError: options.onError } : {}),
        });
        return {
          close: async () => {
            await sub.close();
          },
        };
      },
    },
    sessionId,
    handler,
    options,
  );
}
