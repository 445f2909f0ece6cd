/**
 * A refused request body's connection is closed without losing the answer (lingering-close.ts): the
 * gateway answers (413, 408) before the body is all there, and the client may still be writing it.
 * Raw sockets write past the limit without reading, wait until the gateway has answered and ended
 * its side, write on, and only then read: the whole answer arrives (a destroy right after the answer
 * made the kernel reset the connection on the bytes still coming, and the client lost the answer).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { startSessiond, type Sessiond } from '../../src/host.ts';
import { echoRunner } from '../../src/runner/echo.ts';
import { startGateway, type Gateway } from '../../src/gateway/server.ts';
import { parseTokens } from '../../src/gateway/tokens.ts';
import { closeAfterAnswer } from '../../src/gateway/lingering-close.ts';
import { tempDir } from '../support/tmp.ts';
import { pngBytes } from '../support/png.ts';
import { TA, TENANCY_TOKENS } from '../support/tenancy.ts';

const LIMIT = 64 * 1024;
const CHUNK = pngBytes(64 * 1024, 5);
/** What each client writes before it waits for the answer (four times the limit), and after (sixteen times). */
const BEFORE = 4 * CHUNK.length;
const AFTER = 16 * CHUNK.length;
const tmp = tempDir();
let sessiond: Sessiond;
let gw: Gateway;

test.before(async () => {
  sessiond = await startSessiond({ db: tmp.file('refused.db'), runner: echoRunner({ steps: 1 }) });
  gw = await startGateway({
    sessions: sessiond,
    port: 0,
    maxBlobBytes: LIMIT,
    maxBodyBytes: LIMIT,
    tokens: parseTokens(JSON.stringify(TENANCY_TOKENS), 'test'),
    onError: () => {},
  });
});

test.after(async () => {
  await gw?.close();
  await sessiond?.close();
  tmp.remove();
});

type Outcome = { reply: string; writeError?: string; readError?: string; closedAfterMs: number };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Resolves once the client's connection from `localPort` has left ESTABLISHED (/proc/net/tcp): the
 * gateway has ended it or reset it, so its answer is sent; or after 10 s.
 */
async function answered(localPort: number, port: number): Promise<void> {
  const hex = (p: number) => `:${p.toString(16).toUpperCase().padStart(4, '0')}`;
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const row = readFileSync('/proc/net/tcp', 'utf8')
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .find((cols) => cols[1]?.endsWith(hex(localPort)) && cols[2]?.endsWith(hex(port)));
    if (row?.[3] !== '01') return;
    await sleep(10);
  }
}

/**
 * A client that writes first and reads after: sends `head` and `BEFORE` bytes of body (`chunked`: as
 * chunks) without reading anything, waits until the gateway has answered and ended its side, writes
 * `AFTER` bytes more (and the last chunk, unless `keepWriting`), and only then reads, until the
 * connection closes (ending its own side once the gateway's ends; with `keepWriting`, writing on
 * instead, a chunk every 20 ms). The answer is lost if the gateway resets the connection meanwhile.
 */
async function writeFirstReadAfter(head: string, chunked: boolean, options: { keepWriting?: boolean; port?: number } = {}): Promise<Outcome> {
  const port = options.port ?? gw.port;
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: options.keepWriting === true });
  socket.pause(); // nothing is read until the whole body is written
  let reply = '';
  let writeError: string | undefined;
  let readError: string | undefined;
  let doneWriting = 0;
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.on('error', (err: NodeJS.ErrnoException) => {
    if (doneWriting === 0) writeError ??= err.code ?? err.message;
    else readError ??= err.code ?? err.message;
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  /** Resolves once `data` is with the kernel: false if the connection failed. */
  const send = (data: string | Buffer) => new Promise<boolean>((resolve) => (socket.destroyed ? resolve(false) : socket.write(data, (err) => resolve(!err))));
  const frame = chunked ? Buffer.concat([Buffer.from(`${CHUNK.length.toString(16)}\r\n`), CHUNK, Buffer.from('\r\n')]) : CHUNK;
  let ok = await send(head);
  for (let n = 0; ok && n < BEFORE; n += CHUNK.length) ok = await send(frame);
  if (ok) await answered(socket.localPort!, port);
  for (let n = 0; ok && n < AFTER; n += CHUNK.length) {
    ok = await send(frame);
    await sleep(2); // time for a reset to come back
  }
  if (ok && chunked && !options.keepWriting) await send('0\r\n\r\n');
  doneWriting = Date.now();
  socket.on('data', (d: Buffer) => (reply += d.toString('utf8')));
  socket.resume();
  const trickle = options.keepWriting ? setInterval(() => socket.destroyed || socket.write(frame, () => {}), 20) : undefined;
  let timer: NodeJS.Timeout | undefined;
  const held = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the gateway still held the connection after 15 s; read so far: ${JSON.stringify(reply)}`)), 15_000);
  });
  try {
    await Promise.race([closed, held]);
  } finally {
    clearTimeout(timer);
    clearInterval(trickle);
    socket.destroy();
  }
  return { reply, ...(writeError ? { writeError } : {}), ...(readError ? { readError } : {}), closedAfterMs: Date.now() - doneWriting };
}

const uploadHead = (headers: string) =>
  `POST /v1/blobs HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nAuthorization: Bearer ${TA}\r\nContent-Type: image/png\r\n${headers}\r\n`;

/** The answer's status line and JSON error, asserted whole (the body is as long as its Content-Length says). */
function assertAnswer(outcome: Outcome, status: string, code: string, cut = false): void {
  const seen = JSON.stringify({ ...outcome, reply: outcome.reply.slice(0, 400) });
  assert.match(outcome.reply, new RegExp(`^HTTP/1\\.1 ${status}\\r\\n`), seen);
  assert.match(outcome.reply, /\r\nconnection: close\r\n/i, seen);
  const [head, body] = outcome.reply.split('\r\n\r\n') as [string, string];
  const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]);
  assert.is(Buffer.byteLength(body), length, seen);
  assert.is(JSON.parse(body).error.code, code, seen);
  if (!cut) assert.is(outcome.readError, undefined, seen);
}

test('an upload with no length, written far past the limit before anything is read: the whole 413 arrives', async () => {
  for (let i = 0; i < 3; i++) {
    const outcome = await writeFirstReadAfter(uploadHead('Transfer-Encoding: chunked\r\n'), true);
    assertAnswer(outcome, '413 Payload Too Large', 'payload_too_large');
    assert.match(outcome.reply, `limit of ${LIMIT} bytes`);
    assert.is(outcome.writeError, undefined, 'the gateway read (and dropped) the rest of the body');
  }
});

test('an upload whose Content-Length is over the limit, sent anyway: the whole 413 arrives', async () => {
  const outcome = await writeFirstReadAfter(uploadHead(`Content-Length: ${BEFORE + AFTER}\r\n`), false);
  assertAnswer(outcome, '413 Payload Too Large', 'payload_too_large');
  assert.match(outcome.reply, `Content-Length says ${BEFORE + AFTER} bytes`);
});

test('a JSON body with no length, written far past --max-body-bytes: the whole 413 arrives', async () => {
  const head = `POST /v1/sessions/ses_r_big/inputs HTTP/1.1\r\nHost: 127.0.0.1:${gw.port}\r\nAuthorization: Bearer ${TA}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
  const outcome = await writeFirstReadAfter(head, true);
  assertAnswer(outcome, '413 Payload Too Large', 'payload_too_large');
  assert.match(outcome.reply, `over ${LIMIT} bytes`);
});

test('a JSON body slower than the body timeout, written on after the 408: the whole 408 arrives', async () => {
  const slow = await startGateway({
    sessions: sessiond,
    port: 0,
    bodyTimeoutMs: 300,
    tokens: parseTokens(JSON.stringify(TENANCY_TOKENS), 'test'),
    onError: () => {},
  });
  try {
    const head = `POST /v1/sessions/ses_r_slow/inputs HTTP/1.1\r\nHost: 127.0.0.1:${slow.port}\r\nAuthorization: Bearer ${TA}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const outcome = await writeFirstReadAfter(head, true, { port: slow.port });
    assertAnswer(outcome, '408 Request Timeout', 'request_timeout');
    assert.match(outcome.reply, 'did not arrive within 300 ms');
  } finally {
    await slow.close();
  }
});

test('a client that writes on after reading the answer is cut within the linger bound', async () => {
  const outcome = await writeFirstReadAfter(uploadHead('Transfer-Encoding: chunked\r\n'), true, { keepWriting: true });
  assertAnswer(outcome, '413 Payload Too Large', 'payload_too_large', true);
  assert.ok(outcome.closedAfterMs < 5_000, `cut ${outcome.closedAfterMs} ms after the body was written`);
  const health = await fetch(new URL('/v1/health', gw.url), { headers: { authorization: `Bearer ${TA}` } });
  assert.is(health.status, 200, 'the gateway answers after');
});

test('past the byte bound the connection is cut at once, not at the end of the linger', async () => {
  // the helper on a bare server: a 10 s linger, 256 KiB dropped at most
  const server = createServer((req, res) => {
    closeAfterAnswer(req, res, 10_000, 256 * 1024);
    res.writeHead(413, { 'content-type': 'text/plain' });
    res.end('too large\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = (server.address() as AddressInfo).port;
    const head = `POST / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const started = Date.now();
    const outcome = await writeFirstReadAfter(head, true, { keepWriting: true, port });
    assert.ok(outcome.writeError !== undefined || outcome.readError !== undefined, JSON.stringify(outcome));
    assert.ok(Date.now() - started < 5_000, `cut after ${Date.now() - started} ms`);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test.run();
