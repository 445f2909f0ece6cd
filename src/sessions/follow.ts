/**
 * Following one session's committed events, each once and in order, from a point (every
 * `Sessions.follow`): listening starts first and the log is read after, so nothing committed in
 * between is missed; a live feed's repeats are dropped and its gaps filled from the log.
 */
import { messageOf } from '../errors.ts';
import type { SessionEvent } from '../events/envelope.ts';
import type { EventSubscription, FollowOptions, SessionEventHandler } from './sessions.ts';

export interface FollowSource {
  /** The session's committed events with seq > afterSeq, in order. */
  read(sessionId: string, afterSeq: number): Promise<SessionEvent[]>;
  /** Calls `onEvent` with the session's events as they commit, from now on; resolves once listening. */
  listen(sessionId: string, onEvent: (event: SessionEvent) => void): Promise<{ close(): Promise<void> }>;
}

export async function followSession(
  source: FollowSource,
  sessionId: string,
  handler: SessionEventHandler,
  options: FollowOptions = {},
): Promise<EventSubscription> {
  const onError = options.onError ?? ((err: unknown) => process.stderr.write(`sessiond: following ${sessionId}: ${messageOf(err)}\n`));
  let last = options.afterSeq ?? 0;
  let closed = false;
  let chain: Promise<void> = Promise.resolve();
  const enqueue = (step: () => Promise<void>) => {
    chain = chain.then(() => (closed ? undefined : step())).catch((err: unknown) => report(err));
  };
  const report = (err: unknown) => {
    try {
      onError(err);
    } catch {
      // an onError that throws must not stop delivery
    }
  };
  const deliver = async (event: SessionEvent) => {
    last = event.seq;
    try {
      await handler(event);
    } catch (err) {
      report(err);
    }
  };
  /** Delivers the logged events after `last` and below `before`. */
  const catchUp = async (before = Infinity) => {
    for (const event of await source.read(sessionId, last)) {
      if (closed || event.seq >= before) return;
      if (event.seq > last) await deliver(event);
    }
  };
  const listener = await source.listen(sessionId, (event) =>
    enqueue(async () => {
      if (event.seq <= last) return;
      if (event.seq > last + 1) await catchUp(event.seq).catch((err: unknown) => report(err));
      if (event.seq > last) await deliver(event); // delivered even when the gap could not be read (reported above)
    }),
  );
  enqueue(() => catchUp());
  return {
    get lastSeq() {
      return last;
    },
    async close() {
      closed = true;
      await listener.close();
      await chain;
    },
  };
}
