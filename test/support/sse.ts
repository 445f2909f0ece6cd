/** A server-sent events reader over fetch, for tests: the frames as they arrive, and a wait for one. */
export interface SseFrame {
  id?: string;
  event: string;
  data: string;
  /** `data` parsed as JSON (undefined when it is not). */
  json?: Record<string, unknown>;
  /** When the reader parsed it (Date.now()). */
  arrivedAt: number;
}

export interface SseReader {
  readonly frames: SseFrame[];
  readonly comments: string[];
  readonly status: number;
  readonly headers: Headers;
  /** Resolves with the first frame (from the start) that `match` takes, or rejects after `timeoutMs`. */
  next(match: (f: SseFrame) => boolean, timeoutMs?: number): Promise<SseFrame>;
  /** Resolves when the server ends the stream. */
  readonly ended: Promise<void>;
  close(): void;
}

export async function readSse(url: string, init: RequestInit = {}): Promise<SseReader> {
  const abort = new AbortController();
  const res = await fetch(url, { ...init, signal: abort.signal });
  const frames: SseFrame[] = [];
  const comments: string[] = [];
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of waiters) w();
  };
  const ended = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let at: number;
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          const frame: SseFrame = { event: 'message', data: '', arrivedAt: Date.now() };
          let hasData = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line.slice(1).trim());
            else if (line.startsWith('id: ')) frame.id = line.slice(4);
            else if (line.startsWith('event: ')) frame.event = line.slice(7);
            else if (line.startsWith('data: ')) {
              frame.data += (hasData ? '\n' : '') + line.slice(6);
              hasData = true;
            }
          }
          if (hasData) {
            try {
              frame.json = JSON.parse(frame.data);
            } catch {}
            frames.push(frame);
          }
          wake();
        }
      }
    } catch {
      // aborted by close()
    }
    wake();
  })();
  let done = false;
  void ended.then(() => {
    done = true;
    wake();
  });
  return {
    frames,
    comments,
    status: res.status,
    headers: res.headers,
    ended,
    next(match, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const f = frames.find(match);
          if (f) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(f);
          } else if (done) {
            waiters.delete(check);
            clearTimeout(timer);
            reject(new Error(`the stream ended without the frame; got ${frames.map((x) => x.event).join(', ')}`));
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no such frame within ${timeoutMs} ms; got ${frames.map((x) => x.event).join(', ')}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () => abort.abort(),
  };
}
