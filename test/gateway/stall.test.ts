/**
 * watchStall (stall.ts), on a stand-in response: over the bound for stallMs the connection is cut;
 * a client that drains in time keeps it; an ended response whose socket still holds bytes after
 * stallMs is cut, one that flushed is left alone. (The real thing: stream-quotas.test.ts.)
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { watchStall } from '../../src/gateway/stall.ts';
import { waitFor } from '../../src/testing/wait.ts';

function fakeRes() {
  const socket = Object.assign(new EventEmitter(), {
    writableLength: 0,
    destroyed: false,
    destroy() {
      this.destroyed = true;
    },
  });
  const res = Object.assign(new EventEmitter(), {
    writableLength: 0,
    destroyed: false,
    ended: false,
    socket,
    destroy() {
      this.destroyed = true;
    },
    end() {
      this.ended = true;
    },
  });
  return res;
}
const asRes = (r: ReturnType<typeof fakeRes>) => r as unknown as ServerResponse;

test('stall - over the bound for stallMs: cut', async () => {
  const res = fakeRes();
  const w = watchStall(asRes(res), 100, 50);
  res.writableLength = 500;
  assert.ok(w.over());
  await waitFor(() => res.destroyed, { timeoutMs: 2_000, what: 'the cut' });
});

test('stall - a client that drains in time is not cut', async () => {
  const res = fakeRes();
  const w = watchStall(asRes(res), 100, 80);
  res.writableLength = 500;
  w.over();
  res.writableLength = 0;
  res.emit('drain');
  assert.not.ok(w.over());
  await new Promise((r) => setTimeout(r, 200)); // past stallMs: nothing may fire
  assert.not.ok(res.destroyed);
});

test('stall - ended but unflushed after stallMs: the socket is cut; flushed: left alone', async () => {
  const stuck = fakeRes();
  stuck.socket.writableLength = 10;
  watchStall(asRes(stuck), 100, 50).end();
  assert.ok(stuck.ended);
  await waitFor(() => stuck.socket.destroyed, { timeoutMs: 2_000, what: 'the socket cut' });
  const flushed = fakeRes();
  watchStall(asRes(flushed), 100, 30).end();
  await new Promise((r) => setTimeout(r, 150));
  assert.not.ok(flushed.socket.destroyed);
});

test.run();
