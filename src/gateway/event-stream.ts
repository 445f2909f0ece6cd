/**
 * One session's events as server-sent events: committed events from the log after the client's
 * `Last-Event-ID` (or `?after=SEQ`), then as they commit, each once and in order (`Sessions.follow`),
 * with `id: <seq>` so a reconnect resumes exactly after the last one it got; live-only events (text
 * and reasoning deltas, model retries) as they happen, without an id (a reconnect does not replay
 * them: the committed text that follows holds them). A comment line every `heartbeatMs` keeps
 * proxies from closing an idle stream.
 *
 * Every session event is an unnamed SSE message (an EventSource's `onmessage` gets them all; the
 * JSON says its `type`), so one handler sees the whole session. The stream's own notices are named
 * (`event: lagging`).
 *
 * Backpressure never reaches a worker: events are written without waiting. While more than
 * `maxBufferedBytes` wait unsent for a slow client, live-only events are dropped (counted), and a
 * committed event that would be written ends the stream with an `event: lagging` message naming
 * the seq to resume from; the browser's EventSource reconnects with `Last-Event-ID` and reads the
 * rest from the log. A client that does not read is cut: a stream over the bound for `stallMs`, or
 * ended and still unflushed after it, has its connection destroyed, so its buffer and the follow
 * behind it (on NATS, its subscriptions and any JetStream consumer) are freed at once.
 *
 *   data: {"id":"evt_..","type":"text.delta","sessionId":"ses_1","time":..,"payload":{..}}
 *
 *   id: 7
 *   data: {"id":"evt_..","type":"text.completed","sessionId":"ses_1","seq":7,"time":..,"payload":{..}}
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
