/**
 * One session's events as server-sent events: committed events from the log after `Last-Event-ID`
 * (or `?after=SEQ`) with `id: <seq>`, then as they commit; live-only events without an id;
 * heartbeats. A slow client gets `event: lagging` and a non-reading one is cut, so backpressure never
 * reaches a worker. The wire format and why: docs/gateway.md#the-event-stream.
 */
import type { ServerResponse } from 'node:http';
import { catalog, isEventType } from '../events/catalog.ts';
import type { LiveEvent } from '../events/live-bus.ts';
import type { SessionEvent } from '../events/envelope.ts';
import type { Sessions } from '../sessions/sessions.ts';
import { watchStall } from './stall.ts';

/** Live events of one session as they happen, from now on (the engine's bus, or NATS live subjects). */
export type LiveSource = (sessionId: string, onEvent: (event: LiveEvent) => void) => Promise<{ close(): void | Promise<void> }>;

export interface EventStreamOptions {
  heartbeatMs: number;
  maxBufferedBytes: number;
  /** How long the stream may stay over `maxBufferedBytes`, or unflushed once ended, before its connection is cut (default 5 s). */
  stallMs?: number;
  /** The follow or the live source failed. */
  onError: (err: unknown) => void;
  /**
   * For a stream opened before the caller could tell the session is its own (a session not started
   * yet): asked at the first committed event. False: nothing of the session is sent, and the stream
   * stays open with heartbeats only, as for a session that never starts.
   */
  vet?: () => Promise<boolean>;
}

export interface EventStream {
  readonly stats: { committed: number; live: number; droppedLive: number };
  close(): Promise<void>;
}

function frame(e: LiveEvent | SessionEvent, withId: boolean): string {
  const body = JSON.stringify({
    id: e.id,
    type: e.type,
    sessionId: e.sessionId,
    ...(e.seq !== undefined ? { seq: e.seq } : {}),
    time: e.time,
    payload: e.payload,
  });
  return `${withId ? `id: ${e.seq}\n` : ''}data: ${body}\n\n`;
}

const liveOnly = (type: string) => isEventType(type) && !catalog[type].durable;

export async function openEventStream(
  res: ServerResponse,
  sessions: Omit<Sessions, 'close'>,
  live: LiveSource | undefined,
  sessionId: string,
  afterSeq: number,
  options: EventStreamOptions,
): Promise<EventStream> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.write(`retry: 2000\n: session ${sessionId} after seq ${afterSeq}\n\n`);
  const stats = { committed: 0, live: 0, droppedLive: 0 };
  let ended = false;
  // live events wait for the vet: until the first committed event passed it, nothing is sent
  let vetted: boolean | undefined = options.vet ? undefined : true;
  let lastSeq = afterSeq;
  const stall = watchStall(res, options.maxBufferedBytes, options.stallMs);
  const lagging = () => stall.over();
  const end = () => {
    if (ended) return;
    ended = true;
    clearInterval(heartbeat);
    stall.end();
  };
  const heartbeat = setInterval(() => {
    if (!ended && !lagging()) res.write(`: heartbeat ${new Date().toISOString()}\n\n`);
  }, options.heartbeatMs);
  heartbeat.unref();
  const listening = live
    ? await live(sessionId, (e) => {
        if (ended || vetted !== true || !liveOnly(e.type)) return; // committed events come in order through follow
        if (lagging()) {
          stats.droppedLive++;
          return;
        }
        stats.live++;
        res.write(frame(e, false));
      })
    : undefined;
  let following: Awaited<ReturnType<typeof sessions.follow>> | undefined;
  following = await sessions.follow(
    sessionId,
    async (e) => {
      if (ended || vetted === false) return;
      if (vetted === undefined) {
        vetted = await options.vet!();
        if (!vetted) {
          void following?.close().catch(options.onError);
          void listening?.close();
          return;
        }
      }
      if (lagging()) {
        res.write(
          `event: lagging\ndata: ${JSON.stringify({ resumeAfterSeq: lastSeq, reason: 'the client reads slower than the session writes: reconnect with Last-Event-ID' })}\n\n`,
        );
        end();
        return;
      }
      stats.committed++;
      lastSeq = e.seq;
      res.write(frame(e, true));
    },
    { afterSeq, onError: options.onError },
  );
  const close = async () => {
    end();
    await listening?.close();
    await following?.close();
  };
  res.on('close', () => void close().catch(options.onError));
  return { stats, close };
}
