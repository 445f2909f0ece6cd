/**
 * Cutting a client that does not read (event-stream.ts, chat.ts): a response over its buffer bound
 * for `stallMs`, or ended and still unflushed that long, has its connection destroyed, so its
 * buffer and whatever feeds it (the follow, live subscriptions, on NATS their consumers) are freed.
 * (A response's 'finish' comes once the socket has the bytes, not the client: the socket is asked.)
 */
import type { ServerResponse } from 'node:http';

export const DEFAULT_STALL_MS = 5_000;

export interface StallWatch {
  /** True while more than the bound waits unsent; starts the stall clock (a drain stops it). */
  over(): boolean;
  /** Ends the response; cuts it if what is buffered has not reached the client within stallMs. */
  end(): void;
}

export function watchStall(res: ServerResponse, maxBufferedBytes: number, stallMs = DEFAULT_STALL_MS): StallWatch {
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  const arm = () => {
    if (timer !== undefined) return;
    timer = setTimeout(() => {
      if (!res.destroyed) res.destroy();
    }, stallMs);
    timer.unref();
    res.once('drain', () => {
      if (ended) return;
      clearTimeout(timer);
      timer = undefined;
    });
  };
  return {
    over() {
      const over = res.writableLength > maxBufferedBytes;
      if (over && !ended) arm();
      return over;
    },
    end() {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      res.end();
      const socket = res.socket;
      setTimeout(() => {
        if (socket && !socket.destroyed && socket.writableLength > 0) socket.destroy();
      }, stallMs).unref();
    },
  };
}
