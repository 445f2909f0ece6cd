/**
 * Closing the connection of a request body refused before it was all read (413, 408), without
 * losing the answer: a "lingering close", as Apache and nginx do. Destroying the socket once the
 * answer is written, with the client still sending its body, makes the kernel reset the connection
 * (unread bytes at close, or bytes arriving after it), and a reset can cost the client the answer it
 * has not read yet. So the answer goes out with `connection: close`, then the gateway half-closes
 * (FIN: the client reads the whole answer and sees its end), reads and drops what the client still
 * sends, and destroys the socket when the client ends its side, or after `LINGER_MS`, or past
 * `LINGER_MAX_BYTES` dropped, whichever comes first.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** How long, at most, a refused body's connection is drained after its answer. */
export const LINGER_MS = 2_000;
/** How many bytes of a refused body's rest are read and dropped, at most, before its connection is cut. */
export const LINGER_MAX_BYTES = 8 * 1024 * 1024;

/**
 * The connection closes once the answer to `req` is sent, lingering as above; nothing when the body
 * was read to its end. Call before the answer is written (it sets `connection: close`).
 */
export function closeAfterAnswer(req: IncomingMessage, res: ServerResponse, lingerMs = LINGER_MS, maxBytes = LINGER_MAX_BYTES): void {
  if (req.readableEnded || res.headersSent) return;
  res.setHeader('connection', 'close');
  // a read marks the request consumed: else Node "dumps" its body once the answer is written, its
  // parser dropping the bytes where this linger cannot count them
  req.read(0);
  const socket = req.socket;
  const destroySoon = socket.destroySoon;
  // Node's server ends a `connection: close` exchange, once the answer is written, with the socket's
  // destroySoon(): end, and destroy as soon as the write side is done, the body's rest unread. This
  // socket lingers instead (unless the body did all arrive, or the client ended its side: then
  // nothing more comes).
  socket.destroySoon = () => {
    if (req.complete || socket.readableEnded) return destroySoon.call(socket);
    let dropped = 0;
    const cut = () => {
      clearTimeout(timer);
      req.removeListener('readable', drop);
      socket.destroy();
    };
    const timer = setTimeout(cut, lingerMs);
    timer.unref();
    // through the request, so the HTTP parser, which reads the socket, keeps reading it
    function drop(): void {
      for (let chunk: Buffer | null = req.read(); chunk !== null; chunk = req.read()) {
        dropped += chunk.length;
        if (dropped > maxBytes) {
          cut();
          return;
        }
      }
    }
    socket.end();
    socket.once('end', cut);
    socket.once('close', () => clearTimeout(timer));
    req.on('readable', drop);
    drop();
  };
}
